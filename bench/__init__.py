"""Atrium's benchmark: ``make bench`` (``python -m bench``).

It builds a 250,000-entity catalog in a scratch database, times the portal's four typical
requests through the real ASGI app, and prints each as a ratio to a bare endpoint returning
the same bytes in the same run, so numbers from different machines can be compared.
"""
