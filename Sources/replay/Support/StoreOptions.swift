import ArgumentParser
import EventStoreLMDB
import Foundation

/// `--store PATH`, the option every command that reads or writes a store shares.
struct StoreOptions: ParsableArguments {
    @Option(help: "The store directory (default: $READING_STORE, else ./reading-store).")
    var store: String?

    /// The store directory: `--store`, else `$READING_STORE`, else `./reading-store`.
    var url: URL {
        URL(fileURLWithPath: store ?? ProcessInfo.processInfo.environment["READING_STORE"] ?? "reading-store")
    }

    /// Opens an existing store; a missing directory, or one without a `data.mdb`, is a failure
    /// ("no store at PATH") that writes nothing, not a new store.
    ///
    /// - Parameter readOnly: open without writing anything (`verify`, `backup`). Otherwise the
    ///   store is opened for writing (views that lag the log are caught up), and a store on
    ///   read-only media, or one this user may not write, is opened read-only instead: the
    ///   commands that only read still work there.
    /// - Parameter checkPages: check every page of the data file first (a command that reads
    ///   the whole store: `sync --with`), so that a damaged file is one error, never a signal.
    func openExisting(readOnly: Bool = false, checkPages: Bool = false) throws -> ReadingStore {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
              FileManager.default.fileExists(atPath: url.appendingPathComponent("data.mdb").path) else {
            throw ReplayError("no store at \(url.path) (create one with `replay demo` or `replay import`)")
        }
        if !readOnly {
            do {
                // An existing LMDB environment that is not a store is refused, never made into one.
                return try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(checkPages: checkPages), creating: false)
            } catch let error as LMDBError where error.code == EROFS || error.code == EACCES {
                // Read-only media or permissions: fall through to a read-only open.
            }
        }
        return try ReadingStore.open(at: url, options: LMDBEnvironmentOptions(readOnly: true, checkPages: checkPages))
    }
}
