-- A callback that raises: the error comes out of lib:wait() as a Lua error, the process goes on.
-- Usage: lua5.4 raising.lua LIBRARY PHOTO
local pl = require "photoledger"
local lib = assert(pl.open(arg[1], { device = "lua-host" }))
assert(lib:save_to_album(arg[2], "Trip", function() error("raised in the callback") end))
local ok, err = pcall(lib.wait, lib)
print("wait " .. tostring(ok) .. " " .. tostring(err))
print("pending " .. lib:pending())
print("still works " .. assert(lib:save_to_album(arg[2], "Trip")))
lib:close()
print("survived")
