"""Where a store is: a file path (SQLite, the default) or a ``postgresql://`` URL (the team
store), and how a URL is shown.

A URL may carry a password (``postgresql://user:secret@host/db`` or ``?password=secret``); it
is never shown: every message, report and hint names the store as :func:`shown` spells it,
with the password replaced by ``***``. Nothing is imported at module level, so that
`cutaway list` on an SQLite file pays nothing for this module (urllib.parse imports re)."""

from __future__ import annotations

# What libpq accepts as a connection URI's scheme.
POSTGRESQL_SCHEMES = ("postgresql://", "postgres://")
HIDDEN = "***"


def is_postgresql_url(location: str) -> bool:
    return location.startswith(POSTGRESQL_SCHEMES)


def shown(location: str) -> str:
    """The store as messages name it: a path as it is, a URL with its password hidden."""
    if not is_postgresql_url(location):
        return location
    import urllib.parse

    scheme, _, rest = location.partition("://")
    authority_end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, tail = rest[:authority_end], rest[authority_end:]
    userinfo, at, hosts = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.partition(':')[0]}:{HIDDEN}@{hosts}"
    path, question, query = tail.partition("?")
    if question:
        fields = []
        for field in query.split("&"):
            key, equals, _ = field.partition("=")
            if equals and urllib.parse.unquote(key) == "password":
                field = f"{key}={HIDDEN}"
            fields.append(field)
        query = "&".join(fields)
    return f"{scheme}://{authority}{path}{question}{query}"


def passwords(location: str) -> list[str]:
    """Every password a URL holds, as written and decoded (so that a message quoting either
    can be cleaned of it), longest first."""
    if not is_postgresql_url(location):
        return []
    import urllib.parse

    found = set()
    rest = location.partition("://")[2]
    authority_end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    userinfo, at, _ = rest[:authority_end].rpartition("@")
    if at and ":" in userinfo:
        found.add(userinfo.partition(":")[2])
    for field in rest.partition("?")[2].split("&"):
        key, equals, value = field.partition("=")
        if equals and urllib.parse.unquote(key) == "password":
            found.add(value)
    found |= {urllib.parse.unquote(password) for password in found}
    return sorted((p for p in found if p), key=len, reverse=True)


def without_passwords(text: str, location: str) -> str:
    """``text`` (an error message, say) with every password of ``location`` replaced."""
    for password in passwords(location):
        text = text.replace(password, HIDDEN)
    return text
