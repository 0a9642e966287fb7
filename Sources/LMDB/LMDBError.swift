#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif
import Foundation

/// A failure reported by LMDB (or by the wrapper around it), naming the operation that failed.
///
/// Every C failure in this module goes through one initializer, so the message always comes from
/// `mdb_strerror` and the operation always names the call and its target, for example
/// `"mdb_put(events): MDB_MAP_FULL: Environment mapsize limit reached (-30792)"`.
public struct LMDBError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, in Swift terms.
    public enum Kind: Sendable, Equatable {
        /// `MDB_NOTFOUND`: no such key or database.
        case notFound
        /// `MDB_KEYEXIST`: the key exists and the put asked not to overwrite it.
        case keyExists
        /// `MDB_MAP_FULL`: the memory map is full (the write paths grow it and retry).
        case mapFull
        /// `MDB_MAP_RESIZED`: another process grew the map (transaction begins adopt it and retry).
        case mapResized
        /// `MDB_READERS_FULL`: every reader slot is taken.
        case readersFull
        /// `MDB_DBS_FULL`: more named databases than the environment allows.
        case databasesFull
        /// `MDB_CORRUPTED` or `MDB_PAGE_NOTFOUND`: the file is damaged.
        case corrupted
        /// `MDB_INVALID` or `MDB_VERSION_MISMATCH`: the file is not an LMDB file this library reads.
        case invalidFile
        /// `MDB_BAD_VALSIZE`: a key or value of an unsupported size, or bytes a codec cannot decode.
        case badValueSize
        /// `MDB_PANIC`, `MDB_BAD_TXN` and the other LMDB-specific codes.
        case lmdb
        /// The path is already open in this process (LMDB forbids opening one path twice).
        case alreadyOpen
        /// A system `errno` value (for example `EACCES` for a write on a read-only environment).
        case system
        /// The disk holding the store is full (`ENOSPC`, or LMDB's `EIO` for a short write with
        /// next to no space left): nothing of the failed transaction was committed.
        case diskFull
        /// Another process has the same `data.mdb` open through a different `lock.mdb`; opening
        /// it too could lose acknowledged writes (see the store's file locks).
        case lockFileMismatch
        /// A put with ``LMDBPutFlags/append`` (or ``WriteTransaction/append(_:sorted:)``) was given
        /// a key that is not greater than the database's last key (or than the key before it):
        /// `MDB_APPEND` needs strictly increasing keys. Nothing of the refused entry (or batch)
        /// was written.
        case appendOutOfOrder
    }

    /// The operation that failed, with its target, for example `"mdb_put(events)"`.
    public let operation: String
    /// LMDB's return code (an `MDB_*` constant or an `errno` value), kept for diagnostics.
    public let code: Int32
    /// The message of `mdb_strerror` for ``code`` (or the wrapper's own message).
    public let message: String

    /// Creates the error for a failed LMDB call; the one way C failures become Swift errors.
    package init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
        self.message = String(cString: mdb_strerror(code))
    }

    /// Creates an error raised by the wrapper itself (a codec or a usage rule), not by a C call.
    init(operation: String, code: Int32, message: String) {
        self.operation = operation
        self.code = code
        self.message = message
    }

    /// The error a codec throws for bytes it cannot decode: kind ``Kind/badValueSize``, operation
    /// `decode(<codec>)`, with `detail` (which rule the bytes broke) as the message.
    public static func undecodable(codec: String, _ detail: String) -> LMDBError {
        LMDBError(operation: "decode(\(codec))", code: MDB_BAD_VALSIZE, message: detail)
    }

    /// The kind of failure, derived from ``code``.
    public var kind: Kind {
        switch code {
        case MDB_NOTFOUND: return .notFound
        case MDB_KEYEXIST: return .keyExists
        case MDB_MAP_FULL: return .mapFull
        case MDB_MAP_RESIZED: return .mapResized
        case MDB_READERS_FULL: return .readersFull
        case MDB_DBS_FULL: return .databasesFull
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND: return .corrupted
        case MDB_INVALID, MDB_VERSION_MISMATCH: return .invalidFile
        case MDB_BAD_VALSIZE: return .badValueSize
        case LMDBError.alreadyOpenCode: return .alreadyOpen
        case LMDBError.lockFileMismatchCode: return .lockFileMismatch
        case LMDBError.appendOutOfOrderCode: return .appendOutOfOrder
        case ENOSPC: return .diskFull
        case MDB_KEYEXIST...MDB_LAST_ERRCODE: return .lmdb
        default: return .system
        }
    }

    /// A description naming the operation, LMDB's code and its message.
    public var description: String {
        "\(operation): \(message) (\(code))"
    }

    /// The private code of ``Kind/alreadyOpen`` (outside LMDB's and errno's ranges).
    static let alreadyOpenCode: Int32 = -29_000
    /// The private code of ``Kind/lockFileMismatch``.
    static let lockFileMismatchCode: Int32 = -29_001
    /// The private code of ``Kind/appendOutOfOrder`` (LMDB itself reports `MDB_KEYEXIST`).
    static let appendOutOfOrderCode: Int32 = -29_002

    /// The error for an `MDB_APPEND` whose key is not strictly greater than the one before it.
    static func appendOutOfOrder(_ operation: String, key: UnsafeRawBufferPointer, detail: String) -> LMDBError {
        let hex = key.prefix(48).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        return LMDBError(operation: operation, code: appendOutOfOrderCode,
                         message: "key 0x\(hex)\(key.count > 48 ? "…" : "") \(detail): MDB_APPEND needs strictly increasing keys; nothing of it was written")
    }

    /// The error for a failed write (a commit or a copy): a full disk is named as such. LMDB
    /// reports a short `pwrite` as `EIO`, which is what a full disk usually gives, so `EIO` with
    /// less than 1 MiB free on the file system of `directory` is reported as a full disk too.
    package static func writeFailure(code: Int32, operation: String, directory: String) -> LMDBError {
        guard code == ENOSPC || code == EIO else { return LMDBError(operation: operation, code: code) }
        var fs = statvfs()
        let free: UInt64? = statvfs(directory, &fs) == 0 ? UInt64(fs.f_bavail) * UInt64(fs.f_frsize) : nil
        if code == EIO, let free, free >= 1 << 20 { return LMDBError(operation: operation, code: code) }
        return LMDBError(operation: operation, code: ENOSPC,
                         message: "the disk is full: \(free.map { "\($0) bytes" } ?? "no space") left on the file system of \(directory); "
                             + "nothing of this write was committed (free some space and retry)")
    }

    /// Throws an ``LMDBError`` for a non-zero LMDB return code.
    @inline(__always)
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
        if code != 0 { throw LMDBError(operation: operation(), code: code) }
    }
}

extension String {
    /// `self` with leading zeros up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
