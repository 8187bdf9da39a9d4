"""PhotoLedger from Python: a photo library with PhotoKit's model, over libphotoledger's C interface.

    import photoledger

    with photoledger.open("library.sqlite", device="phone") as lib:
        identifier = lib.save_to_album("/tmp/shot.jpg", "Trip", move=True)

Every failure raises PhotoLedgerError (or a subclass): its ``status`` is the code photoledger.h
documents, its ``name`` the code's name ("missingResource"), its message says what to do.

Threads: a Library may be used from several threads at once. The ``*_async`` methods return a
``concurrent.futures.Future`` at once; the work runs on the library's own worker thread, where the
optional callback is called, then the future is resolved. A callback that raises does not stop
anything: its exception becomes the future's (``future.result()`` raises it).
"""

from ._library import (
    AccessDeniedError,
    IdentifierNotFoundError,
    InvalidArgumentError,
    InvalidResourceError,
    Library,
    MissingResourceError,
    PhotoLedgerError,
    SyncError,
    library_version,
    open,
    status_name,
)

__all__ = [
    "AccessDeniedError",
    "IdentifierNotFoundError",
    "InvalidArgumentError",
    "InvalidResourceError",
    "Library",
    "MissingResourceError",
    "PhotoLedgerError",
    "SyncError",
    "library_version",
    "open",
    "status_name",
]
__version__ = "1.0.0"
