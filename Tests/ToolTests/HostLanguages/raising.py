"""A callback that raises: its exception becomes the future's, the process goes on.
Usage: python3 raising.py LIBRARY PHOTO"""
import sys

import photoledger


class Raised(Exception):
    pass


def callback(identifier, error):
    raise Raised("raised in the callback")


with photoledger.open(sys.argv[1], device="python-host") as lib:
    future = lib.save_to_album_async(sys.argv[2], "Trip", callback=callback)
    print("future", type(future.exception(timeout=120)).__name__, future.exception())
    print("still works", lib.save_to_album(sys.argv[2], "Trip"))
print("survived")

# A library left open with a call queued: it is closed at exit, after the call's callback. The
# callback runs on the library's thread, before or after the last line here: each line is written
# whole (print writes the text and the newline apart, and another thread's line can come between).
left_open = photoledger.open(sys.argv[1])
left_open.save_to_album_async(
    sys.argv[2], "Trip", callback=lambda identifier, error: sys.stdout.write(f"at exit {identifier is not None} {error}\n"))
sys.stdout.write("exiting\n")
