import ArgumentParser
import EventStoreLMDB

/// `--events-per-commit` of `import` and `import-from`: how many events one write transaction
/// commits, so that a file of any length imports in bounded memory.
struct ImportPartOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Events committed in one write transaction (default \(ReadingStore.importPartSize)).",
        discussion: "A file of at most this many events is imported all or nothing; a longer one in parts of this many, in file order, each whole. If it stops, importing it again skips what is stored and adds the rest."))
    var eventsPerCommit: Int = ReadingStore.importPartSize

    func validate() throws {
        guard eventsPerCommit >= 1 else { throw ValidationError("--events-per-commit \(eventsPerCommit) is below 1") }
    }

    /// The end of an import's error message: that nothing was imported, or which parts were.
    static func stopped(committed: Int, of total: Int, throughLine line: Int? = nil) -> String {
        guard committed > 0 else { return "nothing was imported" }
        let through = line.map { " (through line \($0))" } ?? ""
        return "the first \(committed) of \(total) events\(through) were imported in earlier parts, each whole, and nothing after them; "
            + "import the file again once this is fixed: what is stored is skipped and the rest added"
    }
}
