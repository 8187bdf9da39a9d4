"""The seed flow from Python: save a photo first into an album, blocking, then asynchronously
with a callback, moving the temporary file.  Usage: python3 seed.py LIBRARY PHOTO TEMP_PHOTO"""
import sys
import threading

import photoledger

library_path, photo, temp = sys.argv[1:4]
with photoledger.open(library_path, device="python-host") as lib:
    first = lib.save_to_album(photo, "Trip")
    print("saved", first)
    received = {}

    def saved(identifier, error):
        received["identifier"], received["error"] = identifier, error
        received["thread"] = threading.current_thread() is not threading.main_thread()

    future = lib.save_to_album_async(temp, "Trip", move=True, callback=saved)
    identifier = future.result(timeout=120)
    print("callback", received["identifier"], received["error"], "worker-thread" if received["thread"] else "main-thread")
    print("future", identifier)
    album = next(album for album in lib.albums() if album["title"] == "Trip")
    print("first", album["assetIdentifiers"][0])
    print("assets", len(lib.assets()))
print("closed")
