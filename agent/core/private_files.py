"""Files of the daemon's state that only root may read.

Why: the state directory is 0751 (the proxy and the shims reach ``spool/`` by name), so a file
in it that takes the process umask (0644 under ``make run``) is readable by any local user who
knows its name. SQLite creates its ``-wal`` and ``-shm`` files with the mode of the database
file, so the database is created 0600 before SQLite first opens it, and an existing one (and its
companions) is brought to 0600.
"""

from __future__ import annotations

import os
from pathlib import Path

_SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")


def private_sqlite(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist; make it and its SQLite
    companion files 0600 if they do."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass
    for suffix in _SQLITE_COMPANIONS:
        p = Path(str(path) + suffix)
        try:
            if p.stat().st_mode & 0o077:
                os.chmod(p, 0o600)
        except FileNotFoundError:
            continue
