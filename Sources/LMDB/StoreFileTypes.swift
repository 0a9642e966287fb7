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
    /// exists and is not a regular file of its own: a FIFO, a device, a socket, a directory, a
    /// symbolic link, or a file with more than one hard link.
    ///
    /// Checked with `lstat`, which never blocks and never follows a link, before anything opens
    /// the files: `open(2)` of a FIFO waits for a writer for ever, LMDB would map a device or
    /// write its lock table into one, and through a link (a store received as an archive) it
    /// would write its lock table into, and `chmod` 0600, whatever file the link reaches. The
    /// files are then opened with `O_NOFOLLOW`. Missing files are fine (a new store). The store
    /// directory itself may be a symbolic link (it is resolved first).
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
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFLNK {
                throw LMDBError(operation: "open(\(path))", code: MDB_INVALID,
                                message: "\(name) is a symbolic link; a store's files must be regular files of their own, never links "
                                    + "(LMDB would write into the file it points to): replace it with the file itself")
            }
            if info.st_mode & S_IFMT != S_IFREG {
                throw LMDBError(operation: "open(\(path))", code: MDB_INVALID,
                                message: "\(name) is \(describe(info.st_mode)), not a regular file; a store's files must be regular files")
            }
            if info.st_nlink > 1 {
                throw LMDBError(operation: "open(\(path))", code: MDB_INVALID,
                                message: "\(name) has \(info.st_nlink) hard links; a store's files must be regular files of their own, never links "
                                    + "(LMDB would write into every other name of the file): copy it (`cp`) instead of linking it")
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
