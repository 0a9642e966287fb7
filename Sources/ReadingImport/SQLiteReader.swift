import CSQLite
import Foundation

/// A read-only SQLite connection to a *private copy* of a database file (and its `-wal` file,
/// when there is one), so the original is never modified: opening a WAL-mode database, even
/// read-only, creates `-shm` and `-wal` files beside it and may checkpoint, and KOReader users
/// copy `statistics.sqlite3` straight from a device. The copy sees committed transactions that
/// are still only in the `-wal` file, which `immutable=1` on the original would miss.
///
/// Not `Sendable`: one connection, used by one import on one thread.
final class SQLiteReader {
    private var db: OpaquePointer?
    private let directory: URL
    /// The deadline the progress handler checks (kept alive as long as the connection).
    private var deadline: Deadline?

    /// A point in time for the C progress handler, which gets it through a raw pointer.
    final class Deadline {
        let end: ContinuousClock.Instant
        init(_ end: ContinuousClock.Instant) { self.end = end }
    }

    /// The copy is made only of a regular file (symbolic links followed): a directory, a device,
    /// a FIFO or a socket is refused before anything is copied, and so is a `-wal` beside it
    /// that is not a regular file.
    ///
    /// The copy leaves nothing behind, a SIGKILL included: its directory is named after this
    /// process (`reading-import-<pid>-<UUID>`); the `-wal` is folded into the copy (rollback
    /// journal mode, on the copy only); once the read-only connection has the file open, the file
    /// and its directory are removed, and SQLite reads through its open descriptor. A copy left by
    /// a process killed in the moment before that (its pid no longer running) is removed by the
    /// next import that makes one.
    init(copying url: URL, into temporaryDirectory: URL? = nil) throws(ImportError) {
        let fm = FileManager.default
        try Self.requireRegularFile(url.path, named: url.path)
        let walPath = url.path + "-wal"
        var walInfo = stat()
        let hasWAL = lstat(walPath, &walInfo) == 0
        if hasWAL { try Self.requireRegularFile(walPath, named: url.path) }
        let parent = temporaryDirectory ?? fm.temporaryDirectory
        Self.removeCopiesOfEndedProcesses(in: parent)
        directory = parent.appendingPathComponent("\(Self.copyPrefix)\(getpid())-\(UUID().uuidString)")
        let copy = directory.appendingPathComponent("statistics.sqlite3")
        do {
            try fm.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try fm.copyItem(at: url, to: copy)
            if hasWAL { try fm.copyItem(at: URL(fileURLWithPath: walPath), to: URL(fileURLWithPath: copy.path + "-wal")) }
        } catch {
            try? fm.removeItem(at: directory)
            throw .unreadable(path: url.path, detail: "could not make a private copy: \(error.localizedDescription)")
        }
        // The copy in rollback-journal mode, its WAL (if any) checkpointed into it, so that the
        // read-only connection needs no file beside it. A file SQLite cannot do this to is left
        // as it is; the read-only open below reports what is wrong with it.
        var writer: OpaquePointer?
        if sqlite3_open_v2(copy.path, &writer, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK {
            sqlite3_exec(writer, "PRAGMA journal_mode=DELETE", nil, nil, nil)
        }
        sqlite3_close(writer)
        let code = sqlite3_open_v2(copy.path, &db, SQLITE_OPEN_READONLY, nil)
        guard code == SQLITE_OK else {
            // sqlite3_open_v2: "Whether or not an error occurs when it is opened, resources associated
            // with the database connection handle should be released by passing it to sqlite3_close()".
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db); db = nil
            try? fm.removeItem(at: directory)
            throw .database(code: code, message: message)
        }
        // The connection holds the file open (sqlite3_open_v2 opens it; a first read makes sure):
        // the names can go. A `-wal` still there (a file SQLite could not convert) is needed by
        // name, so that copy stays until ``close()``.
        sqlite3_exec(db, "PRAGMA schema_version", nil, nil, nil)
        if !fm.fileExists(atPath: copy.path + "-wal") { try? fm.removeItem(at: directory) }
    }

    /// The name every private copy's directory starts with, followed by the pid of the process
    /// that made it.
    static let copyPrefix = "reading-import-"

    /// Removes the private copies in `parent` whose process no longer runs (killed before it
    /// removed its copy): `reading-import-<pid>-…` where `kill(pid, 0)` says no such process.
    static func removeCopiesOfEndedProcesses(in parent: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent.path) else { return }
        for name in names where name.hasPrefix(copyPrefix) {
            let rest = name.dropFirst(copyPrefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = pid_t(rest[..<dash]), pid > 0, pid != getpid() else { continue }
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            let path = parent.appendingPathComponent(name)
            // Only a directory holding a copy (never a file or link of that name).
            var info = stat()
            guard lstat(path.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else { continue }
            try? FileManager.default.removeItem(at: path)
        }
    }

    deinit { close() }

    /// Closes the connection and removes what is left of the private copy (usually nothing: its
    /// names are removed once it is open; also done when the reader is released, so every exit
    /// path, a thrown error included, removes it).
    func close() {
        if let db { sqlite3_progress_handler(db, 0, nil, nil) }
        sqlite3_close(db); db = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private static func requireRegularFile(_ path: String, named original: String) throws(ImportError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .unreadable(path: path, detail: errno == ENOENT ? "no such file" : String(cString: strerror(errno)))
        }
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: kind = "a directory"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFIFO: kind = "a FIFO (named pipe)"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a regular file"
        }
        throw .unreadable(path: original, detail: "\(path == original ? "it" : path) is \(kind), not a statistics.sqlite3 file; nothing was copied")
    }

    /// Interrupts every statement that runs past `seconds` from now (SQLite's progress handler,
    /// checked every 1,000 virtual machine instructions); the statement then fails with
    /// ``ImportError/limitExceeded(_:)``.
    func limitTime(seconds: Int) {
        let box = Deadline(ContinuousClock.now + .seconds(seconds))
        deadline = box
        sqlite3_progress_handler(db, 1_000, { context in
            guard let context else { return 0 }
            let deadline = Unmanaged<Deadline>.fromOpaque(context).takeUnretainedValue()
            return ContinuousClock.now >= deadline.end ? 1 : 0
        }, Unmanaged.passUnretained(box).toOpaque())
        timeLimit = seconds
    }

    private var timeLimit: Int?

    /// The columns of `name` when it is a real table (`sqlite_master` type `table`); nil for a
    /// view, a missing table or anything else, whose rows are not read.
    func tableColumns(of name: String) throws(ImportError) -> Set<String>? {
        var isTable = false
        try query("SELECT type FROM sqlite_master WHERE name = '\(name)'") { row throws(ImportError) in
            if row.first?.string == "table" { isTable = true }
        }
        return isTable ? try columns(of: name) : nil
    }

    /// A column value as SQLite stored it.
    enum Value: Equatable {
        case integer(Int64), real(Double), text(String), null
        var int: Int64? {
            switch self {
            case .integer(let v): v
            case .real(let v): v.isFinite && abs(v) < 9e18 ? Int64(v) : nil
            case .text(let t): Int64(t)
            case .null: nil
            }
        }
        var string: String? {
            switch self {
            case .text(let t): t
            case .integer(let v): String(v)
            case .real(let v): String(v)
            case .null: nil
            }
        }
    }

    /// Runs `sql` and calls `body` with each row's values.
    func query(_ sql: String, _ body: ([Value]) throws(ImportError) -> Void) throws(ImportError) {
        var statement: OpaquePointer?
        var code = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard code == SQLITE_OK else { throw error(code) }
        let columns = sqlite3_column_count(statement)
        while true {
            code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw error(code) }
            var row: [Value] = []
            row.reserveCapacity(Int(columns))
            for i in 0..<columns {
                switch sqlite3_column_type(statement, i) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, i)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, i)))
                case SQLITE_NULL: row.append(.null)
                default: row.append(.text(sqlite3_column_text(statement, i).map { String(cString: $0) } ?? ""))
                }
            }
            try body(row)
        }
    }

    /// The column names of `table`, empty when there is no such table.
    func columns(of table: String) throws(ImportError) -> Set<String> {
        var names = Set<String>()
        try query("PRAGMA table_info(\(table))") { row throws(ImportError) in
            if row.count > 1, let name = row[1].string { names.insert(name) }
        }
        return names
    }

    private func error(_ code: Int32) -> ImportError {
        if code == SQLITE_INTERRUPT, let timeLimit {
            return .limitExceeded("reading the database took longer than \(timeLimit) s (the time limit of an import)")
        }
        return .database(code: code, message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection")
    }
}
