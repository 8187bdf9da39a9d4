"""The Library class and its errors, over the functions of photoledger.h."""

import atexit
import concurrent.futures
import ctypes
import ctypes.util
import itertools
import json
import os
import threading
import weakref

# Status codes of photoledger.h.
OK = 0
ERROR_IDENTIFIER_NOT_FOUND = 3201
ERROR_INVALID_RESOURCE = 3302
ERROR_MISSING_RESOURCE = 3303
ERROR_ACCESS_RESTRICTED = 3310
ERROR_ACCESS_USER_DENIED = 3311
ERROR_INVALID_ARGUMENT = 5001

_SAVE_MOVE_FILE = 1
_ASSETS_FAVORITES = 1
_ASSETS_DELETED = 2
_IMAGE_VERSIONS = {"current": 0, "unadjusted": 1, "original": 2}
_CONTENT_MODES = {"fit": 0, "fill": 1}


class PhotoLedgerError(Exception):
    """A call of the library failed: ``status`` is its photoledger.h code, ``name`` the code's name."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.name = status_name(status)
        self.message = message

    def __str__(self):
        return f"{self.message} [{self.name}]"


class InvalidArgumentError(PhotoLedgerError, ValueError):
    """An argument the library refuses: an unknown value, an existing destination file."""


class IdentifierNotFoundError(PhotoLedgerError, LookupError):
    """No asset or album has the identifier."""


class MissingResourceError(PhotoLedgerError):
    """The file does not exist, or a photo's bytes are not on this device yet."""


class InvalidResourceError(PhotoLedgerError):
    """The file is no photo or video, or a damaged one."""


class AccessDeniedError(PhotoLedgerError, PermissionError):
    """Access to the library is not granted, or is restricted."""


class SyncError(PhotoLedgerError):
    """Sync failed: no remote, the server unreachable or refusing (codes 4001-4009)."""


def _error(status, message):
    if status == ERROR_INVALID_ARGUMENT:
        kind = InvalidArgumentError
    elif status == ERROR_IDENTIFIER_NOT_FOUND:
        kind = IdentifierNotFoundError
    elif status == ERROR_MISSING_RESOURCE:
        kind = MissingResourceError
    elif status == ERROR_INVALID_RESOURCE:
        kind = InvalidResourceError
    elif status in (ERROR_ACCESS_RESTRICTED, ERROR_ACCESS_USER_DENIED):
        kind = AccessDeniedError
    elif 4000 < status < 5000:
        kind = SyncError
    else:
        kind = PhotoLedgerError
    return kind(status, message or "the call failed")


# --- The C library -----------------------------------------------------------------------------

_COMPLETION = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)


class _OpenOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("device", ctypes.c_char_p), ("preauthorized", ctypes.c_int)]


def _load():
    path = os.environ.get("PHOTOLEDGER_LIBRARY") or ctypes.util.find_library("photoledger") or "libphotoledger.so.1"
    try:
        native = ctypes.CDLL(path)
    except OSError as error:
        raise ImportError(
            f"cannot load libphotoledger ({path}): {error}; install libphotoledger.so.1 or set "
            "PHOTOLEDGER_LIBRARY to the library's path (such as .build/release/libPhotoLedgerC.so)"
        ) from error
    out = ctypes.POINTER(ctypes.c_void_p)
    handle = ctypes.c_void_p
    text = ctypes.c_char_p
    texts = ctypes.POINTER(ctypes.c_char_p)
    size = ctypes.c_size_t
    status = ctypes.c_int
    signatures = {
        "photoledger_status_name": (text, [status]),
        "photoledger_version": (text, []),
        "photoledger_string_free": (None, [ctypes.c_void_p]),
        "photoledger_open": (status, [text, ctypes.POINTER(_OpenOptions), ctypes.POINTER(handle), out]),
        "photoledger_close": (None, [handle]),
        "photoledger_save_to_album": (status, [handle, text, text, ctypes.c_uint, out, out]),
        "photoledger_save_to_album_async": (status, [handle, text, text, ctypes.c_uint, _COMPLETION, ctypes.c_void_p, out]),
        "photoledger_create_album": (status, [handle, text, out, out]),
        "photoledger_rename_album": (status, [handle, text, text, out]),
        "photoledger_delete_album": (status, [handle, text, out]),
        "photoledger_add_to_album": (status, [handle, text, texts, size, out]),
        "photoledger_insert_into_album": (status, [handle, text, texts, size, size, out]),
        "photoledger_remove_from_album": (status, [handle, text, texts, size, out]),
        "photoledger_set_favorite": (status, [handle, texts, size, ctypes.c_int, out]),
        "photoledger_set_hidden": (status, [handle, texts, size, ctypes.c_int, out]),
        "photoledger_delete_assets": (status, [handle, texts, size, out]),
        "photoledger_recover_assets": (status, [handle, texts, size, out]),
        "photoledger_export": (status, [handle, text, ctypes.c_int, text, out]),
        "photoledger_thumbnail": (status, [handle, text, ctypes.c_uint, ctypes.c_int, text, out, out]),
        "photoledger_thumbnail_async": (
            status,
            [handle, text, ctypes.c_uint, ctypes.c_int, text, _COMPLETION, ctypes.c_void_p, out],
        ),
        "photoledger_fetch_assets_json": (status, [handle, text, ctypes.c_uint, out, out]),
        "photoledger_fetch_albums_json": (status, [handle, out, out]),
        "photoledger_history_json": (status, [handle, text, text, out, out]),
        "photoledger_status_json": (status, [handle, out, out]),
        "photoledger_set_remote": (status, [handle, text, text, out]),
        "photoledger_sync": (status, [handle, out, out]),
        "photoledger_sync_async": (status, [handle, _COMPLETION, ctypes.c_void_p, out]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(native, name)
        function.restype = restype
        function.argtypes = argtypes
    return native


_native = _load()


def status_name(status):
    """The name photoledger.h gives a status code ("ok", "missingResource", "unknown")."""
    return _native.photoledger_status_name(status).decode()


def library_version():
    """The version of the libphotoledger loaded, such as "1.0.0"."""
    return _native.photoledger_version().decode()


def _take(pointer):
    """The text of a string the library returned, released."""
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode("utf-8")
    finally:
        _native.photoledger_string_free(pointer)


def _call(function, *arguments, result=False):
    """Calls `function` with `arguments`, an out string when `result`, and the message; raises on failure."""
    message = ctypes.c_void_p()
    value = ctypes.c_void_p()
    extra = (ctypes.byref(value),) if result else ()
    status = function(*arguments, *extra, ctypes.byref(message))
    text = _take(value.value) if result else None
    if status != OK:
        raise _error(status, _take(message.value))
    return text


def _path(value):
    return os.fsencode(value)


def _text(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value.encode("utf-8")


def _identifiers(assets):
    if isinstance(assets, str):
        assets = [assets]
    encoded = [_text(asset, "an asset identifier") for asset in assets]
    return (ctypes.c_char_p * max(len(encoded), 1))(*encoded), len(encoded)


# --- Completions -------------------------------------------------------------------------------

_pending = {}
_pending_lock = threading.Lock()
_tokens = itertools.count(1)


@_COMPLETION
def _complete(status, result, message, user_data):
    # Runs on the library's worker thread, with the GIL that ctypes takes for it.
    with _pending_lock:
        future, callback, convert = _pending.pop(user_data)
    try:
        if status == OK:
            value, error = convert(result.decode("utf-8") if result is not None else None), None
        else:
            value, error = None, _error(status, message.decode("utf-8") if message is not None else None)
        if callback is not None:
            callback(value, error)
    except BaseException as raised:  # a raising callback must not unwind into the C library
        future.set_exception(raised)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _start(function, arguments, callback, convert):
    future = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    token = next(_tokens)
    with _pending_lock:
        _pending[token] = (future, callback, convert)
    message = ctypes.c_void_p()
    status = function(*arguments, _complete, ctypes.c_void_p(token), ctypes.byref(message))
    if status != OK:
        with _pending_lock:
            _pending.pop(token, None)
        raise _error(status, _take(message.value))
    return future


# --- The library -------------------------------------------------------------------------------

# Libraries still open when the interpreter exits are closed first, so no completion runs on a
# worker thread once Python is gone.
_open_libraries = weakref.WeakSet()


@atexit.register
def _close_open_libraries():
    for library in list(_open_libraries):
        library.close()



def open(path, device=None, preauthorized=True):
    """Opens the library file at `path`, creating it when it does not exist.

    `device` names this device in the library (letters, digits, '.', '_', '-'); None takes the
    name recorded by an earlier open, else one made from the host name. `preauthorized` grants
    read and write access at once, as for a program that owns its library.
    """
    return Library(path, device=device, preauthorized=preauthorized)


class Library:
    """An open PhotoLedger library: a context manager that closes it on exit."""

    def __init__(self, path, device=None, preauthorized=True):
        self._handle = None
        options = _OpenOptions(ctypes.sizeof(_OpenOptions), _text(device, "device") if device is not None else None, 1 if preauthorized else 0)
        handle = ctypes.c_void_p()
        message = ctypes.c_void_p()
        status = _native.photoledger_open(_path(path), ctypes.byref(options), ctypes.byref(handle), ctypes.byref(message))
        if status != OK:
            raise _error(status, _take(message.value))
        self._handle = handle
        self.path = os.fspath(path)
        _open_libraries.add(self)

    # Lifetime

    def close(self):
        """Waits for the queued asynchronous calls, then closes the library. Closing twice does nothing."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _open_libraries.discard(self)
            _native.photoledger_close(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()
        return False

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def _open_handle(self):
        if self._handle is None:
            raise InvalidArgumentError(ERROR_INVALID_ARGUMENT, "the library is closed; open it again with photoledger.open")
        return self._handle

    # Saving

    def save_to_album(self, path, album=None, move=False):
        """Saves the photo or video at `path` as a new asset, first in the album titled `album`
        (created when no album has the title); returns the asset's local identifier. With `move`
        the file is removed once saved; on failure it is always kept."""
        album = _text(album, "album") if album is not None else None
        flags = _SAVE_MOVE_FILE if move else 0
        return _call(_native.photoledger_save_to_album, self._open_handle(), _path(path), album, flags, result=True)

    def save_to_album_async(self, path, album=None, move=False, callback=None):
        """save_to_album on the library's worker thread: returns a Future of the identifier.
        `callback(identifier, error)` is called there first (error None on success)."""
        album = _text(album, "album") if album is not None else None
        flags = _SAVE_MOVE_FILE if move else 0
        arguments = (self._open_handle(), _path(path), album, flags)
        return _start(_native.photoledger_save_to_album_async, arguments, callback, lambda value: value)

    # Albums

    def create_album(self, title):
        """Creates an album; returns its local identifier."""
        return _call(_native.photoledger_create_album, self._open_handle(), _text(title, "title"), result=True)

    def rename_album(self, album, title):
        _call(_native.photoledger_rename_album, self._open_handle(), _text(album, "album"), _text(title, "title"))

    def delete_album(self, album):
        """Deletes an album; its assets stay in the library."""
        _call(_native.photoledger_delete_album, self._open_handle(), _text(album, "album"))

    def add_to_album(self, album, assets):
        """Appends assets (an identifier or a list of them) at the end of an album."""
        array, count = _identifiers(assets)
        _call(_native.photoledger_add_to_album, self._open_handle(), _text(album, "album"), array, count)

    def insert_into_album(self, album, assets, index=0):
        """Inserts assets at `index` of an album (0: first, the cover)."""
        if index < 0:
            raise ValueError(f"index {index} is negative; 0 is the album's first place")
        array, count = _identifiers(assets)
        _call(_native.photoledger_insert_into_album, self._open_handle(), _text(album, "album"), array, count, index)

    def remove_from_album(self, album, assets):
        """Removes assets from an album; they stay in the library."""
        array, count = _identifiers(assets)
        _call(_native.photoledger_remove_from_album, self._open_handle(), _text(album, "album"), array, count)

    # Assets

    def set_favorite(self, assets, favorite=True):
        array, count = _identifiers(assets)
        _call(_native.photoledger_set_favorite, self._open_handle(), array, count, 1 if favorite else 0)

    def set_hidden(self, assets, hidden=True):
        array, count = _identifiers(assets)
        _call(_native.photoledger_set_hidden, self._open_handle(), array, count, 1 if hidden else 0)

    def delete_assets(self, assets):
        """Moves assets to Recently Deleted."""
        array, count = _identifiers(assets)
        _call(_native.photoledger_delete_assets, self._open_handle(), array, count)

    def recover_assets(self, assets):
        """Brings assets back from Recently Deleted."""
        array, count = _identifiers(assets)
        _call(_native.photoledger_recover_assets, self._open_handle(), array, count)

    def export(self, asset, destination, version="current"):
        """Writes an asset's photo or video ("current", "unadjusted" or "original") to a new file."""
        if version not in _IMAGE_VERSIONS:
            raise ValueError(f"version {version!r} is unknown; use one of {sorted(_IMAGE_VERSIONS)}")
        _call(_native.photoledger_export, self._open_handle(), _text(asset, "asset"), _IMAGE_VERSIONS[version], _path(destination))

    def thumbnail(self, asset, size, destination, mode="fit"):
        """Writes the image manager's image of `asset` for a box of `size` pixels to a new file;
        returns its description (`photoledger thumbnail --json`)."""
        arguments = self._thumbnail_arguments(asset, size, destination, mode)
        return json.loads(_call(_native.photoledger_thumbnail, *arguments, result=True))

    def thumbnail_async(self, asset, size, destination, mode="fit", callback=None):
        """thumbnail on the library's worker thread: returns a Future of the description."""
        arguments = self._thumbnail_arguments(asset, size, destination, mode)
        return _start(_native.photoledger_thumbnail_async, arguments, callback, json.loads)

    def _thumbnail_arguments(self, asset, size, destination, mode):
        if mode not in _CONTENT_MODES:
            raise ValueError(f"mode {mode!r} is unknown; use 'fit' or 'fill'")
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size {size!r} is not a number of pixels (1 or more)")
        return (self._open_handle(), _text(asset, "asset"), size, _CONTENT_MODES[mode], _path(destination))

    # Listings (the shapes of the photoledger command's --json output)

    def assets(self, album=None, favorites=False, deleted=False):
        """The assets as `photoledger assets --json` lists them: a list of dicts."""
        flags = (_ASSETS_FAVORITES if favorites else 0) | (_ASSETS_DELETED if deleted else 0)
        album = _text(album, "album") if album is not None else None
        return json.loads(_call(_native.photoledger_fetch_assets_json, self._open_handle(), album, flags, result=True))

    def albums(self):
        """The albums as `photoledger albums --json` lists them: a list of dicts."""
        return json.loads(_call(_native.photoledger_fetch_albums_json, self._open_handle(), result=True))

    def history(self, object=None, device=None):
        """The audit trail as `photoledger history --json` lists it."""
        object = _text(object, "object") if object is not None else None
        device = _text(device, "device") if device is not None else None
        return json.loads(_call(_native.photoledger_history_json, self._open_handle(), object, device, result=True))

    def status(self):
        """The library's status as `photoledger status --json` gives it."""
        return json.loads(_call(_native.photoledger_status_json, self._open_handle(), result=True))

    # Sync

    def set_remote(self, library_url, token):
        """Sets the server library to sync with and this device's token."""
        _call(_native.photoledger_set_remote, self._open_handle(), _text(library_url, "library_url"), _text(token, "token"))

    def sync(self):
        """Syncs with the remote; returns the report (`photoledger sync --json`)."""
        return json.loads(_call(_native.photoledger_sync, self._open_handle(), result=True))

    def sync_async(self, callback=None):
        """sync on the library's worker thread: returns a Future of the report."""
        return _start(_native.photoledger_sync_async, (self._open_handle(),), callback, json.loads)
