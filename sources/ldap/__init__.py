"""The LDAP directory: reading it page by page, and syncing users and groups into the catalog."""
