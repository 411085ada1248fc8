"""Does not parse."""


def lse(x)
    return x
