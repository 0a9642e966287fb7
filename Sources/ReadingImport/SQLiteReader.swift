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

    init(copying url: URL) throws(ImportError) {
        let fm = FileManager.default
        guard fm.fileExists(atPath: url.path) else { throw .unreadable(path: url.path, detail: "no such file") }
        directory = fm.temporaryDirectory.appendingPathComponent("reading-import-\(UUID().uuidString)")
        let copy = directory.appendingPathComponent("statistics.sqlite3")
        do {
            try fm.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try fm.copyItem(at: url, to: copy)
            let wal = URL(fileURLWithPath: url.path + "-wal")
            if fm.fileExists(atPath: wal.path) { try fm.copyItem(at: wal, to: URL(fileURLWithPath: copy.path + "-wal")) }
        } catch {
            try? fm.removeItem(at: directory)
            throw .unreadable(path: url.path, detail: "could not make a private copy: \(error.localizedDescription)")
        }
        let code = sqlite3_open_v2(copy.path, &db, SQLITE_OPEN_READONLY, nil)
        guard code == SQLITE_OK else {
            // sqlite3_open_v2: "Whether or not an error occurs when it is opened, resources associated
            // with the database connection handle should be released by passing it to sqlite3_close()".
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db); db = nil
            try? fm.removeItem(at: directory)
            throw .database(code: code, message: message)
        }
    }

    deinit {
        sqlite3_close(db)
        try? FileManager.default.removeItem(at: directory)
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
        .database(code: code, message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection")
    }
}
