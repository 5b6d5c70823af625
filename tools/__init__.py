"""Generators of the data files the program and the render read, each from a pinned public source."""
