"""Instructor tooling: build the source notebooks, release, grade, report."""
