"""Errors from Python: exceptions with the status and name of photoledger.h.
Usage: python3 errors.py LIBRARY NOT_AN_IMAGE MISSING BAD_LIBRARY"""
import sys

import photoledger

library_path, not_image, missing, bad = sys.argv[1:5]


def show(step, call):
    try:
        call()
        print(step, "no error")
    except photoledger.PhotoLedgerError as error:
        print(step, type(error).__name__, error.status, error.name, error.message)


with photoledger.open(library_path, device="python-host") as lib:
    show("not-an-image", lambda: lib.save_to_album(not_image, "Trip", move=True))
    show("missing", lambda: lib.save_to_album(missing, "Trip"))
    show("bad-library", lambda: photoledger.open(bad))
    show("callback", lambda: lib.save_to_album_async(missing, "Trip").result(timeout=120))
    show("unknown-album", lambda: lib.rename_album("00000000-0000-0000-0000-000000000000/L0/040", "x"))
show("after-close", lambda: lib.albums())
with photoledger.open(library_path + ".denied.sqlite", device="python-host", preauthorized=False) as denied:
    show("not-authorized", lambda: denied.albums())
