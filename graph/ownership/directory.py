"""The directory's configuration, from settings."""

from __future__ import annotations

from graph.settings import Settings
from sources.errors import AtriumError
from sources.ldap.config import PRESETS, DirectoryConfig

__all__ = ["directory_config"]


def directory_config(settings: Settings) -> DirectoryConfig:
    missing = [
        name
        for name, value in (
            ("ATRIUM_LDAP_URL", settings.ldap_url),
            ("ATRIUM_LDAP_USERS_DN", settings.ldap_users_dn),
            ("ATRIUM_LDAP_GROUPS_DN", settings.ldap_groups_dn),
        )
        if not value
    ]
    if missing:
        raise AtriumError(f"the directory sync needs {', '.join(missing)}")
    assert settings.ldap_url and settings.ldap_users_dn and settings.ldap_groups_dn
    config = DirectoryConfig(
        url=settings.ldap_url,
        users_dn=settings.ldap_users_dn,
        groups_dn=settings.ldap_groups_dn,
        attributes=PRESETS[settings.ldap_preset.value],
        bind_dn=settings.ldap_bind_dn,
        bind_password=(
            settings.ldap_bind_password.get_secret_value() if settings.ldap_bind_password else None
        ),
        start_tls=settings.ldap_start_tls,
        ca_file=settings.ldap_ca_file,
        timeout=settings.ldap_timeout,
        page_size=settings.ldap_page_size,
        group_type=settings.ldap_group_type,
    )
    return config.with_attributes(
        user_filter=settings.ldap_user_filter,
        group_filter=settings.ldap_group_filter,
        user_name=settings.ldap_user_name_attribute,
        group_name=settings.ldap_group_name_attribute,
        display_name=settings.ldap_display_name_attribute,
        email=settings.ldap_email_attribute,
        member=settings.ldap_member_attribute,
        member_of=settings.ldap_member_of_attribute,
    )
