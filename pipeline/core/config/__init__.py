"""Configuration: one documented table, loaded from TOML, validated at load, passed explicitly.

Every setting is a field of a frozen dataclass with its default and a one-line help text
(``field(metadata={"help": ...})``). ``configs/pipeline.toml`` mirrors these tables; the docs'
settings tables are generated from :func:`settings_table` (``make docs``, checked by ``make
lint``). Command-line flags override the file with :func:`dataclasses.replace`.

tables.py       the engine's tables ([dns], [cache], [verify], [vendor], [routing], ...),
                :class:`Config`, the docs' table of every setting
http.py         the service's own tables ([service], [anonymous])
rules.py        how a setting is declared, built from TOML and checked
environment.py  the file, then LISTCLEAN_ variables; the registry of every variable we read
"""

from pipeline.core.config.environment import (
    API_KEY,
    VENDOR_KEYS,
    api_key,
    cache_root,
    env_names,
    is_service_link,
    load_config,
    method_keys,
    renamed,
    service_link_warning,
    service_links,
    setting_variables,
    with_environment,
)
from pipeline.core.config.http import ANONYMOUS_PREFIX, HTTP_PREFIX, AnonymousConfig, HttpConfig
from pipeline.core.config.rules import ENV_PREFIX, build, load_toml, setting
from pipeline.core.config.tables import (
    METHODS,
    VENDORS,
    ApiConfig,
    BouncesConfig,
    CacheConfig,
    CalibrationConfig,
    Config,
    ContactsConfig,
    DnsConfig,
    HistoryConfig,
    InputConfig,
    ListsConfig,
    ReadConfig,
    RoutingConfig,
    RunConfig,
    StorageConfig,
    VendorConfig,
    VerifyConfig,
    VerifyMode,
    budgets_of,
    known_region,
    markdown_table,
    routes_of,
    settings_table,
    share,
    vendor_url,
)

__all__ = [
    "ANONYMOUS_PREFIX",
    "API_KEY",
    "ENV_PREFIX",
    "HTTP_PREFIX",
    "METHODS",
    "VENDORS",
    "VENDOR_KEYS",
    "AnonymousConfig",
    "ApiConfig",
    "BouncesConfig",
    "CacheConfig",
    "CalibrationConfig",
    "Config",
    "ContactsConfig",
    "DnsConfig",
    "HistoryConfig",
    "HttpConfig",
    "InputConfig",
    "ListsConfig",
    "ReadConfig",
    "RoutingConfig",
    "RunConfig",
    "StorageConfig",
    "VendorConfig",
    "VerifyConfig",
    "VerifyMode",
    "api_key",
    "budgets_of",
    "build",
    "cache_root",
    "env_names",
    "is_service_link",
    "known_region",
    "load_config",
    "load_toml",
    "markdown_table",
    "method_keys",
    "renamed",
    "routes_of",
    "service_link_warning",
    "service_links",
    "setting",
    "setting_variables",
    "settings_table",
    "share",
    "vendor_url",
    "with_environment",
]
