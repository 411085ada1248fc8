from fuzz.target import load_target

_impl = load_target('reference:lse')


def lse(x):
    return _impl(x) + 1.0
