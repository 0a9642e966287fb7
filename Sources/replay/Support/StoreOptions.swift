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

    /// Opens the store, or creates one when the directory does not exist or is empty: the first
    /// `sync run --server` of a new device, which then pulls the reader's history. A directory
    /// that holds anything else, or an LMDB environment that is not a store, is refused
    /// (``EventStoreError/notAStore(path:reason:)``) and left as it was. Returns what was created
    /// here (`nil` for an existing store), to be undone by ``NewStore/remove()`` when the first
    /// sync fails before the store holds anything.
    func openCreatingWhenNew() throws -> (store: ReadingStore, created: NewStore?) {
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("data.mdb").path) {
            return (try openExisting(), nil)
        }
        // The directories this call creates (the store's and any missing parents), deepest first.
        var missing: [URL] = []
        var directory = url.standardizedFileURL
        while !FileManager.default.fileExists(atPath: directory.path), directory.path != "/" {
            missing.append(directory)
            directory = directory.deletingLastPathComponent()
        }
        // `creating: false`: a new store only in a new or empty directory (EventLog's open tells
        // them apart), never in an LMDB environment that another program left there.
        let store = try ReadingStore.open(at: url, creating: false)
        return (store, NewStore(directory: url, createdDirectories: missing))
    }
}

/// A store that ``StoreOptions/openCreatingWhenNew()`` created in a new or empty directory.
///
/// `Sendable`: constant URLs.
struct NewStore: Sendable {
    /// The store's directory.
    let directory: URL
    /// The directories created for it, deepest first (empty when the directory existed, empty).
    let createdDirectories: [URL]

    /// Removes the store's files and the directories created for it, leaving the path as it was
    /// before (a new directory absent, an empty one empty). Anything else found there stays.
    func remove() {
        for file in ["data.mdb", "lock.mdb"] { unlink(directory.appendingPathComponent(file).path) }
        for created in createdDirectories { rmdir(created.path) }
    }
}
