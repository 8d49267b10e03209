"""Atrium composed: the app factory and its lifespan (``atrium.app``), the ``atrium`` command
line (``atrium.cli``) and the serving lifecycle around them (``atrium.drain``). It sits above
``ssr`` and ``graph`` and puts them together; nothing below imports it."""
