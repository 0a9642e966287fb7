import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes `data` to the file at `path` the one way every command that writes an output file
/// writes it: a regular file, private (0600 under any umask), whole or not at all.
///
/// The bytes go to a temporary file in the same directory (created 0600 by `mkstemp`), are flushed
/// with `fsync`, and the temporary file is renamed over `path`; the directory is flushed too. A
/// failure at any step removes the temporary file and leaves `path` as it was.
///
/// Refused, naming the path and the reason (exit 1), before anything is written:
/// - a path that names a FIFO, a device, a socket, a directory or a symbolic link (renaming over it
///   would replace it; writing through it would write outside the named path);
/// - a path in a directory that holds a store (`data.mdb` or `lock.mdb`): the store's own files
///   are never replaced, and nothing is added beside them;
/// - a missing directory.
///
/// Foundation and POSIX failures become one line with the reason (`strerror`), "the disk is full"
/// for `ENOSPC`.
func writeOutputFile(_ data: Data, to path: String, option: String = "--out") throws {
    try checkOutputFile(path, option: option)
    let file = URL(fileURLWithPath: path)
    let directory = file.deletingLastPathComponent().path
    func refuse(_ reason: String) -> ReplayError { ReplayError("\(option) \(file.path): \(reason)") }

    var template = Array((directory + "/.\(file.lastPathComponent).XXXXXX").utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard fd >= 0 else { throw refuse(reason(errno)) }
    let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var done = false
    defer {
        if !done { unlink(temporary) }
    }
    do {
        defer { close(fd) }
        // mkstemp creates 0600; set it again in case the platform applied something else.
        guard fchmod(fd, 0o600) == 0 else { throw refuse(reason(errno)) }
        var written = 0
        while written < data.count {
            let n = data.withUnsafeBytes { write(fd, $0.baseAddress! + written, data.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw refuse(reason(errno))
            }
            written += n
        }
        guard fsync(fd) == 0 else { throw refuse(reason(errno)) }
    }
    guard rename(temporary, file.path) == 0 else { throw refuse(reason(errno)) }
    done = true
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryFD >= 0 {
        _ = fsync(directoryFD)
        close(directoryFD)
    }
}

/// The checks of ``writeOutputFile(_:to:option:)``, also run before a command starts its work, so
/// a refused path fails fast.
func checkOutputFile(_ path: String, option: String = "--out") throws {
    let file = URL(fileURLWithPath: path)
    let directory = file.deletingLastPathComponent().path
    func refuse(_ reason: String) -> ReplayError { ReplayError("\(option) \(file.path): \(reason)") }

    var info = stat()
    guard stat(directory, &info) == 0 else {
        throw errno == ENOENT ? ReplayError("\(option): the directory \(directory) does not exist") : refuse(reason(errno))
    }
    guard info.st_mode & S_IFMT == S_IFDIR else { throw ReplayError("\(option): \(directory) is not a directory") }
    for storeFile in ["data.mdb", "lock.mdb"] where lstat(directory + "/" + storeFile, &info) == 0 {
        throw refuse("the directory \(directory) holds a store (\(storeFile)); write the file elsewhere")
    }
    if lstat(file.path, &info) == 0 {
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFLNK:
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: file.path)) ?? "?"
            throw refuse("is a symbolic link (to \(target)); name the file itself")
        default: throw refuse(notARegularFile(info.st_mode))
        }
    } else if errno != ENOENT {
        throw refuse(reason(errno))
    }
}

/// Why a file of this mode is not a regular file, as a reader says it ("is a directory", "is a
/// device, not a regular file").
func notARegularFile(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: "is a directory"
    case S_IFIFO: "is a FIFO (named pipe), not a regular file"
    case S_IFCHR, S_IFBLK: "is a device, not a regular file"
    case S_IFSOCK: "is a socket, not a regular file"
    default: "is not a regular file"
    }
}

/// Checks an input file before a command reads it (`import`, `import-from`): it exists and is a
/// regular file or a FIFO (a pipe, as `<(…)` gives); a device (which may never end), a directory
/// or a socket is refused with one line naming the path and what it is.
func checkInputFile(_ path: String) throws {
    var info = stat()
    guard stat(path, &info) == 0 else { throw ReplayError("cannot read \(path): \(reason(errno))") }
    let type = info.st_mode & S_IFMT
    guard type == S_IFREG || type == S_IFIFO else { throw ReplayError("\(path) \(notARegularFile(info.st_mode))") }
}

/// One reason for a POSIX error code, as a reader understands it: `strerror`, with the common
/// cases said plainly.
func reason(_ code: Int32) -> String {
    switch code {
    case ENOSPC, EDQUOT: "the disk is full (\(String(cString: strerror(code))))"
    case EACCES, EPERM: "no permission (\(String(cString: strerror(code))))"
    case EROFS: "the file system is read-only"
    default: String(cString: strerror(code))
    }
}
