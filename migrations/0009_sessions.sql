-- Sessions of people signed in with the OpenID provider, when no Redis keeps them. Only a hash
-- of the session id (the cookie's value) is stored: a copy of this table signs nobody in.
create table sessions (
    id_hash text primary key,
    data jsonb not null,                   -- who (ref, scopes, name, picture), the ID token
    idle_until timestamptz not null,       -- pushed on use, never past expires_at
    expires_at timestamptz not null        -- sign-in time plus the session's longest life
);
create index sessions_idle_until on sessions (idle_until);

-- Sign-ins under way: the state sent to the provider (hashed), with the nonce, the PKCE
-- verifier, the browser that started it and where to go after. Each is used once.
create table sign_ins (
    state_hash text primary key,
    data jsonb not null,
    expires_at timestamptz not null
);
create index sign_ins_expires_at on sign_ins (expires_at);

-- Signing in by e-mail finds the User whose profile has it.
create index entities_user_email on entities (lower(spec #>> '{profile,email}'))
    where kind = 'User';
