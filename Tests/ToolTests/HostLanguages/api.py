"""The rest of the interface from Python: albums and membership, favorite, hide, delete and
recover, export, thumbnails, the listings, history, status, sync without a remote, and the
arguments the library refuses.  Usage: python3 api.py LIBRARY PHOTO_1 PHOTO_2 OUTPUT_FOLDER"""
import os
import sys

import photoledger

library_path, photo_1, photo_2, out = sys.argv[1:5]


def fails(step, call):
    try:
        call()
        print(step, "no error")
    except photoledger.PhotoLedgerError as error:
        print(step, error.status, error.name, error.message)


with photoledger.open(library_path, device="python-host") as lib:
    a = lib.save_to_album(photo_1)
    b = lib.save_to_album(photo_2)
    album = lib.create_album("Family")
    lib.add_to_album(album, [a])
    lib.insert_into_album(album, b, 0)
    print("order", [asset["localIdentifier"] for asset in lib.assets(album)] == [b, a])
    lib.rename_album(album, "Family 2026")
    print("renamed", [entry["title"] for entry in lib.albums()])
    lib.remove_from_album(album, [b])
    print("removed", lib.albums()[0]["assetIdentifiers"] == [a])

    lib.set_favorite(a)
    print("favorites", [asset["localIdentifier"] for asset in lib.assets(favorites=True)] == [a])
    lib.set_hidden([b])
    print("hidden", [asset["isHidden"] for asset in lib.assets() if asset["localIdentifier"] == b])
    lib.set_hidden([b], False)
    lib.delete_assets([b])
    print("deleted", [asset["localIdentifier"] for asset in lib.assets(deleted=True)] == [b])
    lib.recover_assets(b)
    print("recovered", lib.assets(deleted=True) == [])

    exported = os.path.join(out, "exported.jpg")
    lib.export(a, exported, version="original")
    with open(exported, "rb") as first, open(photo_1, "rb") as original:
        print("exported", first.read() == original.read())
    thumbnail = lib.thumbnail(a, 64, os.path.join(out, "thumb.jpg"), mode="fill")
    print("thumbnail", thumbnail["pixelWidth"], thumbnail["pixelHeight"], thumbnail["uniformTypeIdentifier"])
    later = lib.thumbnail_async(b, 256, os.path.join(out, "thumb-async.jpg")).result(timeout=120)
    print("thumbnail-async", later["localIdentifier"] == b, os.path.exists(later["file"]))

    history = lib.history(object=a)
    print("history", history[0]["type"], history[0]["device"], len(history) >= 2)
    print("history-device", len(lib.history(device="python-host")) > len(history), lib.history(device="nobody") == [])
    status = lib.status()
    print("status", status["assets"], status["albums"], status["device"], status["remote"])

    fails("sync", lambda: lib.sync())
    fails("sync-async", lambda: lib.sync_async().result(timeout=120))
    fails("bad-remote", lambda: lib.set_remote("ftp://example", "token"))
    fails("unknown-asset", lambda: lib.set_favorite("00000000-0000-0000-0000-000000000000/L0/001"))
    fails("export-exists", lambda: lib.export(a, exported))
    fails("index-past-end", lambda: lib.insert_into_album(album, [b], 5))
    fails("thumbnail-exists", lambda: lib.thumbnail(a, 64, os.path.join(out, "thumb.jpg")))
    fails("delete-album", lambda: lib.delete_album(album))
    print("albums-left", lib.albums())
