import CommandLineParsing

// The command tree of `photoledger`: names, arguments, options and help texts.

/// Options every subcommand accepts.
let globalOptions: [OptionDefinition] = [
    .option("library", value: "path", help: "The library file (default: $PHOTOLEDGER_LIBRARY)."),
    .option("device", value: "name", help: "This device's name (default: the one recorded by 'init', else the host name)."),
    .flag("json", help: "Write machine-readable JSON to standard output."),
    .flag("quiet", short: "q", help: "Print only errors and the requested data."),
]

private let assetArguments = ArgumentDefinition("asset", arity: .oneOrMore, help: "Asset identifiers (full, UUID, or a unique UUID prefix).")
private let albumArgument = ArgumentDefinition("album", help: "Album identifier (full, UUID, unique prefix) or exact title.")

private func assetFlagCommand(_ name: String, _ abstract: String) -> CommandDefinition {
    CommandDefinition(name, abstract: abstract, arguments: [assetArguments])
}

/// The tool's commands.
let rootCommand = CommandDefinition(
    "photoledger",
    abstract: "Manage a PhotoLedger photo library: import, albums, history, sync.",
    discussion: """
        A library is one SQLite file holding an append-only, hash-chained log of every change,
        with the photos' bytes in a folder beside it. Every change is made in a change block, as
        with Apple's Photos framework, and syncs with other devices through photoledger-server.

        Exit codes: 0 success, 1 failure (including any file that failed to import),
        3 verification found damage, 64 usage error.
        """,
    subcommands: [
        CommandDefinition(
            "init", abstract: "Create the library file and record this device's name.",
            discussion: "The device name is recorded in the library, so later commands need no --device."),
        CommandDefinition("status", abstract: "Show counts, pending events, the remote and the last sync."),
        CommandDefinition(
            "import", abstract: "Import photos and videos from files and folders.",
            discussion: """
                Duplicates (same SHA-256 as an asset of the library, or as another file of the run)
                are skipped and reported. Files that are not photos or videos are reported and
                skipped. A file that fails is reported and the others are still imported; the exit
                code is 1 when any file failed. On a terminal a progress bar shows the count, bytes,
                rate and time left; otherwise one line is printed per file.
                """,
            arguments: [ArgumentDefinition("path", arity: .oneOrMore, help: "Files or folders to import.")],
            options: [
                .option("album", value: "title", help: "Add the imported assets to this album (created when missing)."),
                .flag("move", help: "Move the files into the library instead of copying them."),
                .flag("recursive", short: "r", help: "Import the subfolders of folders too."),
                .flag("dry-run", help: "Show what would be imported, change nothing."),
            ]),
        CommandDefinition(
            "assets", abstract: "List assets (hidden ones included, marked as hidden).",
            options: [
                .option("album", value: "album", help: "Only the assets of this album, in album order."),
                .flag("favorites", help: "Only favorites."),
                .flag("deleted", help: "Only assets in Recently Deleted."),
            ]),
        CommandDefinition("albums", abstract: "List albums with their assets in album order."),
        CommandDefinition(
            "album", abstract: "Create, rename, delete, merge albums and change their assets.",
            subcommands: [
                CommandDefinition("create", abstract: "Create an album.", arguments: [ArgumentDefinition("title", help: "The album's title.")]),
                CommandDefinition(
                    "rename", abstract: "Rename an album.", arguments: [albumArgument, ArgumentDefinition("title", help: "The new title.")]),
                CommandDefinition("delete", abstract: "Delete an album (its assets stay in the library).", arguments: [albumArgument]),
                CommandDefinition("add", abstract: "Append assets at the end of an album.", arguments: [albumArgument, assetArguments]),
                CommandDefinition(
                    "insert", abstract: "Insert assets at an index of an album (0 is the first place).",
                    arguments: [albumArgument, assetArguments],
                    options: [.option("at", value: "index", help: "Where the first asset goes; the others follow it.")]),
                CommandDefinition("remove", abstract: "Remove assets from an album.", arguments: [albumArgument, assetArguments]),
                CommandDefinition(
                    "move", abstract: "Move the assets at some indexes to another index (PhotoKit's rule: remove, then insert).",
                    arguments: [albumArgument],
                    options: [
                        .option("from", value: "indexes", help: "Comma-separated indexes of the assets to move."),
                        .option("to", value: "index", help: "The destination index, counted after removing the moved assets."),
                    ]),
                CommandDefinition(
                    "merge", abstract: "Merge albums into one (the members are united, positions kept).",
                    arguments: [albumArgument, ArgumentDefinition("other", arity: .oneOrMore, help: "The albums to merge into it.")]),
            ]),
        assetFlagCommand("favorite", "Mark assets as favorites."),
        assetFlagCommand("unfavorite", "Unmark assets as favorites."),
        assetFlagCommand("hide", "Hide assets."),
        assetFlagCommand("unhide", "Show hidden assets again."),
        assetFlagCommand("delete", "Move assets to Recently Deleted."),
        assetFlagCommand("recover", "Bring assets back from Recently Deleted."),
        CommandDefinition(
            "export", abstract: "Write an asset's photo or video to a file.",
            arguments: [ArgumentDefinition("asset", help: "The asset identifier.")],
            options: [
                .option("to", value: "file", help: "The file to write (must not exist)."),
                .option("version", value: "version", help: "original or current (the edited rendition when there is one). Default: current."),
            ]),
        CommandDefinition(
            "history", abstract: "Show the audit trail: every change, by whom and when.",
            arguments: [ArgumentDefinition("object", arity: .optional, help: "Only the history of this asset or album.")],
            options: [
                .option("device", value: "device", help: "Only changes made on this device."),
                .option("since", value: "token", help: "Only changes after this change token (printed by a previous 'history')."),
            ]),
        CommandDefinition("verify", abstract: "Verify the hash chain of the library's log (exit 3 on damage)."),
        CommandDefinition("rebuild", abstract: "Rebuild the asset and album views from the log."),
        CommandDefinition(
            "compact", abstract: "Archive old events and remove stored photo bytes that nothing refers to.",
            discussion: """
                The oldest events that the server acknowledged at or below a server sequence, the
                watermark, move to the archive file beside the library; history and verify still
                read them, and change tokens from before them expire. Without --up-to the
                watermark is asked of the remote: the position that every device of the library
                that can still pull has pulled (sync every device first). Stored resources that no
                event refers to are removed too.
                """,
            options: [
                .option(
                    "up-to", value: "server-seq",
                    help: "Archive events acknowledged at or below this server sequence instead of asking the remote."),
            ]),
        CommandDefinition(
            "remote", abstract: "Configure the sync server.",
            subcommands: [
                CommandDefinition(
                    "set", abstract: "Set the server library URL and this device's token.",
                    arguments: [ArgumentDefinition("url", help: "http://HOST:PORT/v1/libraries/NAME")],
                    options: [.option("token", value: "token", help: "The device token printed by 'photoledger-server admin issue-token'.")]),
                CommandDefinition("show", abstract: "Show the configured server."),
            ]),
        CommandDefinition(
            "sync", abstract: "Push local changes, pull other devices' changes, transfer photos.",
            options: [.flag("watch", help: "Keep syncing every few seconds until interrupted.")]),
    ])

/// The parser of the tool's command lines.
let parser = CommandLineParser(root: rootCommand, globalOptions: globalOptions)
