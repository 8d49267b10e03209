"""Settings, read from ``ATRIUM_*`` environment variables and an optional ``atrium.toml``."""

from __future__ import annotations

from enum import StrEnum
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from sources.catalog.placeholders import FetchPolicy
from sources.changes.delivery import DeliveryPolicy
from sources.changes.outbox import Backoff
from sources.db import DatabaseOptions

__all__ = [
    "KEEP_ALIVE_TIMEOUT",
    "SETTINGS_FILE",
    "DatabasePooling",
    "LdapPreset",
    "Mode",
    "Settings",
]


class Mode(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


class DatabasePooling(StrEnum):
    """How connections reach PostgreSQL: each one is a session of its own (directly, or through
    a pooler in session mode), or a pooler such as PgBouncer hands out a server connection for
    one transaction at a time."""

    SESSION = "session"
    TRANSACTION = "transaction"


class LdapPreset(StrEnum):
    OPENLDAP = "openldap"
    ACTIVE_DIRECTORY = "active-directory"


# The settings file, in the directory Atrium runs in; plugins read their sections of it.
SETTINGS_FILE = Path("atrium.toml")

# Seconds idle keep-alive connections stay open unless ATRIUM_KEEP_ALIVE_TIMEOUT says.
KEEP_ALIVE_TIMEOUT = 75

# Secrets that are examples, not secrets: refused in production.
_PLACEHOLDERS = {"", "changeme", "change-me", "secret", "password", "admin", "example"}


class Settings(BaseSettings):
    """Every knob of Atrium. Names are flat so operators can read them: ``ATRIUM_<FIELD>``."""

    model_config = SettingsConfigDict(
        env_prefix="ATRIUM_", toml_file=SETTINGS_FILE, extra="ignore", frozen=True
    )

    mode: Mode = Mode.DEVELOPMENT
    # Unset: an embedded PostgreSQL (pgserver) under ``data_dir``.
    database_url: str | None = None
    database_pool_min: int = Field(default=2, ge=1)
    database_pool_max: int = Field(default=10, ge=1)
    # "transaction" when database_url names PgBouncer (or another pooler) in transaction mode:
    # nothing that needs a session (prepared statements, session advisory locks, startup
    # parameters) is used. See the README's "Running in production".
    database_pooling: DatabasePooling = DatabasePooling.SESSION
    # Seconds to open a connection to PostgreSQL; past it a request answers 503 (UNAVAILABLE)
    # instead of waiting for a database that does not answer.
    database_connect_timeout: float = Field(default=5.0, gt=0, le=300)
    # Seconds a statement may run before it is cancelled (the request then answers 503). Raise
    # it for `atrium migrate` or an import that needs longer.
    database_statement_timeout: float = Field(default=60.0, gt=0)
    data_dir: Path = Path(".atrium")
    # Plugin ids (entry-point names) that must not be loaded.
    disabled_plugins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Query limits: a rejected query costs a scan of its tokens, not an execution.
    max_depth: int = Field(default=12, ge=1)
    max_aliases: int = Field(default=30, ge=1)
    max_tokens: int = Field(default=2_000, ge=10)
    max_body_bytes: int = Field(default=256 * 1024, ge=1024)
    max_batch: int = Field(default=10, ge=1)
    # A query's cost: one per field, times the page size (first/last, capped at max_page_size)
    # of every list above it; a list with no size argument counts as cost_list_size items.
    max_cost: int = Field(default=50_000, ge=1)
    # Persisted and trusted operations run on compiled plans (graph.plans); off: every
    # operation runs on the generic executor.
    compiled_plans: bool = True
    cost_list_size: int = Field(default=10, ge=1)
    # The shared cache. Unset redis_url: each process caches on its own, in memory only.
    redis_url: str | None = None
    cache_prefix: str = "atrium"  # keys and channel names in Redis: several Atriums, one Redis
    cache_max_entries: int = Field(default=50_000, ge=0)
    cache_max_bytes: int = Field(default=64 * 2**20, ge=0)
    cache_ttl: float = Field(default=300.0, gt=0)  # seconds; writes invalidate sooner
    # Whole responses of persisted queries, kept as long as their cache hints allow and dropped
    # when data they contain changes. Off: every persisted query executes (loaders still cache).
    response_cache: bool = True
    response_cache_max_entries: int = Field(default=10_000, ge=0)
    response_cache_max_bytes: int = Field(default=128 * 2**20, ge=0)
    # The kept public answers asked most are written by the HTTP protocol itself, before any
    # ASGI machinery runs (graph.hot_answers, atrium.http_protocol); off: every request goes
    # through the app. Nothing changes in what is answered, only what answering it costs.
    hot_answers: bool = True
    # Automatic persisted queries (production accepts only trusted documents either way).
    apq: bool = True
    # GETs must carry a header a browser cannot send cross-site without a preflight.
    csrf_prevention: bool = True
    max_page_size: int = Field(default=100, ge=1, le=1000)
    # Hosts whose URLs catalog placeholders ($text, $json, $yaml) may read at import: none
    # unless named. An import runs inside the network, and what it reads is published as the
    # entity's spec: any catalog file's author could otherwise read internal endpoints (cloud
    # metadata, admin pages) through Atrium. Exact names, or "*.example.com" for subdomains.
    catalog_fetch_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    catalog_fetch_timeout: float = Field(default=10.0, gt=0, le=120)  # seconds per URL
    catalog_fetch_max_bytes: int = Field(default=2 * 2**20, ge=1024)  # per URL or file read

    # Change events (README, Change events). Hook secrets are sealed with a key derived from
    # change_hooks_key; unset, they are stored as given, and production refuses new hooks.
    change_hooks_key: SecretStr | None = None
    # Networks hooks may post to though they are not public (loopback, private, link-local):
    # none unless named, as for catalog placeholders.
    change_hooks_allowed_networks: Annotated[list[IPv4Network | IPv6Network], NoDecode] = Field(
        default_factory=list
    )
    change_hooks_interval: float = Field(default=1.0, gt=0, le=3600)  # seconds between looks
    change_hooks_timeout: float = Field(default=10.0, gt=0, le=300)  # seconds per request
    # Seconds a replica holds the deliveries it claimed; one that dies holds them this long.
    change_hooks_lease: float = Field(default=120.0, gt=0)
    change_hooks_batch: int = Field(default=100, ge=1, le=1000)  # claimed at once per hook
    # Retries wait base * 2^(attempts-1) seconds (with jitter), at most backoff_max, and stop
    # retry_for seconds after the change: the delivery is failed then, to be re-delivered.
    change_hooks_backoff_base: float = Field(default=5.0, gt=0)
    change_hooks_backoff_max: float = Field(default=900.0, gt=0)
    change_hooks_retry_for: float = Field(default=86_400.0, gt=0)

    log_level: str = "INFO"
    # Seconds a replica keeps serving after SIGTERM while /readyz says 503, so that the load
    # balancer takes it out before it stops; then in-flight requests finish and it exits.
    shutdown_grace: float = Field(default=10.0, ge=0, le=600)
    # Seconds an idle keep-alive connection stays open: longer than the load balancer's own
    # idle timeout (HAProxy keeps idle server connections about 5 s, AWS's ALB 60 s; Google's
    # balancers 600 s want more), so that the balancer closes an idle connection, never Atrium
    # just as the balancer sends a request on it (that request would be lost).
    keep_alive_timeout: int = Field(default=KEEP_ALIVE_TIMEOUT, ge=1)
    # Messages a subscription's connection may leave waiting (its client reads more slowly
    # than events come): past it the connection is closed with 1013 (Try Again Later), which
    # the console's client answers by connecting again. Also what one subscriber of a shared
    # upstream may leave unread.
    subscription_queue: int = Field(default=256, ge=1)

    # The console's build (Vite's manifest, hashed assets, the persisted-query manifest), as
    # `make web` writes it. Unset: web/dist of the checkout Atrium runs from. Missing: the API
    # serves alone, and the console's pages say how to build it.
    web_dir: Path | None = None
    # Render the critical pages on the server; off, every page is the shell the client fills.
    ssr: bool = True
    # Seconds a page waits for its plugins' panels (run at the same time); a slower panel is
    # left to the client, so a slow backend never holds up a page.
    ssr_panel_budget: float = Field(default=0.25, gt=0, le=10)
    # Seconds each plugin has to say what needs attention (Viewer.attention, Group.attention);
    # a later one is left out of the answer, so one slow backend never holds up a home page.
    attention_timeout: float = Field(default=2.0, gt=0, le=60)

    # Authentication. A user named by ``user_header`` is believed only from these networks.
    trusted_proxies: Annotated[list[IPv4Network | IPv6Network], NoDecode] = Field(
        default_factory=list
    )
    user_header: str = "X-Forwarded-User"
    # Members of this group (transitively) may change anything and read the audit log.
    admin_group: str | None = None
    # Whether requests with no user or token may read.
    anonymous_read: bool = True

    # Sign-in with OpenID Connect (authorization code with PKCE). Unset oidc_issuer: no sign-in.
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None
    oidc_scopes: str = "openid profile email"
    # The claim that names the person's User entity; an e-mail claim maps through User e-mails.
    oidc_user_claim: str = "preferred_username"
    # The audience the provider's access tokens (Authorization: Bearer <JWT>) must carry.
    # Unset: only atr_ tokens are accepted as bearer tokens.
    oidc_audience: str | None = None
    # For a token issued to a client (client credentials): the claim naming the group it acts
    # as. A client token without it may only read.
    oidc_client_group_claim: str = "atrium_group"
    # Where browsers reach Atrium (https://console.example.com); the redirect URI is
    # {public_url}/auth/callback.
    public_url: str | None = None
    # Sessions of signed-in people: dropped after this long unused, and this long after sign-in.
    session_idle_timeout: float = Field(default=8 * 3600, gt=0)
    session_max_age: float = Field(default=7 * 24 * 3600, gt=0)

    # The directory. Unset ldap_url: no sync.
    ldap_url: str | None = None
    ldap_bind_dn: str | None = None
    ldap_bind_password: SecretStr | None = None
    ldap_users_dn: str | None = None
    ldap_groups_dn: str | None = None
    ldap_preset: LdapPreset = LdapPreset.OPENLDAP
    ldap_start_tls: bool = False
    ldap_ca_file: Path | None = None
    ldap_timeout: float = Field(default=30.0, gt=0)
    ldap_page_size: int = Field(default=500, ge=1, le=10_000)
    ldap_sync_interval: float = Field(default=3600.0, ge=10)  # seconds
    # A run that would delete more than this share of users or of groups stops (unless forced).
    ldap_deletion_brake: float = Field(default=0.10, ge=0.0, le=1.0)
    # Overrides of the preset's filters and attribute names (see sources/ldap/mapping.py).
    ldap_user_filter: str | None = None
    ldap_group_filter: str | None = None
    ldap_user_name_attribute: str | None = None
    ldap_group_name_attribute: str | None = None
    ldap_display_name_attribute: str | None = None
    ldap_email_attribute: str | None = None
    ldap_member_attribute: str | None = None
    ldap_member_of_attribute: str | None = None
    ldap_group_type: str = "team"

    @field_validator(
        "disabled_plugins",
        "trusted_proxies",
        "catalog_fetch_hosts",
        "change_hooks_allowed_networks",
        mode="before",
    )
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("trusted_proxies", "change_hooks_allowed_networks", mode="after")
    @classmethod
    def _networks(cls, value: list[object]) -> list[IPv4Network | IPv6Network]:
        return [ip_network(str(v), strict=False) for v in value]

    @model_validator(mode="after")
    def _no_placeholder_secrets_in_production(self) -> Settings:
        if self.production and self.ldap_url and self.ldap_bind_dn:
            password = self.ldap_bind_password.get_secret_value() if self.ldap_bind_password else ""
            if password.strip().lower() in _PLACEHOLDERS:
                raise ValueError(
                    "ldap_bind_password is missing or a placeholder; production needs a real one"
                )
        if self.change_hooks_key is not None:
            key = self.change_hooks_key.get_secret_value()
            if len(key) < 16 or (self.production and key.strip().lower() in _PLACEHOLDERS):
                raise ValueError(
                    "change_hooks_key must be a long random value (at least 16 characters)"
                )
        return self

    @model_validator(mode="after")
    def _lease_outlasts_a_request(self) -> Settings:
        # A request is started only while the claim's lease leaves it the timeout to finish.
        if self.change_hooks_lease < 2 * self.change_hooks_timeout:
            raise ValueError("change_hooks_lease must be at least twice change_hooks_timeout")
        return self

    @model_validator(mode="after")
    def _sign_in_complete(self) -> Settings:
        """Sign-in needs its client and where browsers come back to; bearer JWTs need the
        issuer. Half a configuration is refused at start, not found out at the first sign-in."""
        if self.oidc_issuer is None:
            if self.oidc_client_id or self.oidc_audience:
                raise ValueError("oidc_client_id and oidc_audience need oidc_issuer")
            return self
        if not self.oidc_issuer.startswith(("https://", "http://")):
            raise ValueError("oidc_issuer must be the issuer's URL (https://...)")
        if not self.oidc_client_id:
            if not self.oidc_audience:
                raise ValueError(
                    "oidc_issuer is set but neither oidc_client_id (sign-in) nor oidc_audience "
                    "(the provider's access tokens) is"
                )
            return self
        if not self.public_url or not self.public_url.startswith(("https://", "http://")):
            raise ValueError(
                "sign-in needs public_url, where browsers reach Atrium (https://...): the "
                "redirect URI is {public_url}/auth/callback"
            )
        secret = self.oidc_client_secret.get_secret_value() if self.oidc_client_secret else ""
        if not secret or (self.production and secret.strip().lower() in _PLACEHOLDERS):
            raise ValueError("oidc_client_secret is missing or a placeholder")
        return self

    @property
    def catalog_fetch(self) -> FetchPolicy:
        """What catalog imports may read over HTTP."""
        return FetchPolicy(
            hosts=frozenset(self.catalog_fetch_hosts),
            timeout=self.catalog_fetch_timeout,
            max_bytes=self.catalog_fetch_max_bytes,
        )

    @property
    def change_delivery(self) -> DeliveryPolicy:
        """How change events are delivered."""
        return DeliveryPolicy(
            timeout=self.change_hooks_timeout,
            lease=self.change_hooks_lease,
            batch=self.change_hooks_batch,
            backoff=Backoff(
                base=self.change_hooks_backoff_base,
                cap=self.change_hooks_backoff_max,
                retry_for=self.change_hooks_retry_for,
            ),
            allowed_networks=tuple(self.change_hooks_allowed_networks),
        )

    @property
    def database_options(self) -> DatabaseOptions:
        """How to reach PostgreSQL."""
        return DatabaseOptions(
            transaction_pooling=self.database_pooling is DatabasePooling.TRANSACTION,
            connect_timeout=self.database_connect_timeout,
            statement_timeout=self.database_statement_timeout,
        )

    @property
    def console_dir(self) -> Path:
        return self.web_dir or Path(__file__).resolve().parent.parent / "web" / "dist"

    @property
    def production(self) -> bool:
        return self.mode is Mode.PRODUCTION

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit arguments beat the environment, which beats atrium.toml.
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls)
