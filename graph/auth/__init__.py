"""Authentication: who is asking. What they may then do is authorization's (``graph.authz``).

- ``viewer``: the viewer of a request from its headers, in order: a bearer token, a trusted
  proxy's user header, a session (or the demo's cookie in development), else anonymous;
- ``tokens``: Atrium's API tokens (``atr_...``), verified and kept a moment;
- ``jwts``: the identity provider's access tokens (bearer JWTs), verified and kept until they
  expire;
- ``sessions``: session cookies, verified and kept a moment;
- ``signin``: signing in with the identity provider (``/auth/login``, ``/auth/callback``,
  ``/auth/logout``), which makes sessions;
- ``identity``: the provider's client and the session store, as the lifespan connects them.

The tokens, sessions and people these read are kept by ``sources`` (``sources.auth``,
``sources.sessions``, ``sources.oidc``, ``sources.people``).
"""
