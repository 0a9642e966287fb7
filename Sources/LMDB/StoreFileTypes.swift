#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LMDBEnvironment {
    /// Refuses a store whose directory is not a directory, or whose `data.mdb` or `lock.mdb`
    /// exists and is not a regular file (a FIFO, a device, a socket, a directory).
    ///
    /// Checked with `stat`, which never blocks, before anything opens the files: `open(2)` of a
    /// FIFO waits for a writer for ever, and LMDB would map a device or write its lock table into
    /// one. A symbolic link is judged by what it points to. Missing files are fine (a new store).
    ///
    /// - Throws: ``LMDBError`` of kind ``LMDBError/Kind/invalidFile`` naming the file and what it is.
    public static func checkFileTypes(directory: String) throws(LMDBError) {
        var info = stat()
        if stat(directory, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
            throw LMDBError(operation: "open(\(directory))", code: MDB_INVALID,
                            message: "the store path is \(describe(info.st_mode)), not a directory")
        }
        for name in ["data.mdb", "lock.mdb"] {
            let path = directory + "/" + name
            guard stat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT != S_IFREG {
                throw LMDBError(operation: "open(\(path))", code: MDB_INVALID,
                                message: "\(name) is \(describe(info.st_mode)), not a regular file; a store's files must be regular files")
            }
        }
    }

    private static func describe(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }
}
