"""Atrium's benchmark: ``make bench`` (``python -m bench``), run from a checkout.

Each scenario (``bench/__main__.py``'s ``SCENARIOS``) builds its data in a scratch database,
times what a user of Atrium does, and prints it as a ratio to a baseline measured in the same
run, mostly the same bytes from a bare Starlette endpoint, so that figures from different
machines can be compared. ``bench.harness`` is what the scenarios share.
"""
