"""Fails with an exception two frames deep."""


def inner() -> None:
    raise ValueError("boom from the script")


def outer() -> None:
    inner()


outer()
