import Foundation
import PackagePlugin

/// Generates `EmbeddedMigrations.swift` from every `Migrations/<Set>/NNNN_name.sql` file, so the
/// store's migrations are compiled into the binaries that use them.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let migrations = context.package.directoryURL.appending(path: "Migrations")
        let inputs = (FileManager.default.enumerator(atPath: migrations.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { migrations.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) migrations into \(target.name)",
                executable: try context.tool(named: "embed-migrations").url,
                arguments: [migrations.path, output.path],
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
