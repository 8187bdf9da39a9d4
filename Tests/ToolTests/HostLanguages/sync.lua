-- Sync from Lua: set the remote, save a photo into an album, sync with a callback delivered by
-- lib:wait(), then the blocking form.  Usage: lua5.4 sync.lua LIBRARY PHOTO LIBRARY_URL TOKEN
local pl = require "photoledger"
local lib = assert(pl.open(arg[1], { device = "lua-host" }))
print("no-remote " .. table.concat({ tostring(select(1, lib:sync())), tostring(select(3, lib:sync())) }, " "))
assert(lib:set_remote(arg[3], arg[4]))
print("saved " .. assert(lib:save_to_album(arg[2], "Trip")))
local report
assert(lib:sync(function(ok, json, err) report = ok and json or ("failed: " .. tostring(err)) end))
lib:wait()
print("report " .. report)
print("again " .. assert(lib:sync()))
lib:close()
