import Foundation
import ReadingEvents

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A JSON Lines input (`replay import`) read as a stream, a batch of decoded lines at a time, so
/// memory does not grow with the file: the bytes come through a buffer of 1 MiB (more only for a
/// single longer line, up to ``maxLineBytes``), and a batch holds at most ``batchSize`` envelopes.
///
/// The input can be read more than once (``forEachBatch(_:)`` starts from the first line each
/// time: the check pass, then the store's write transaction, which runs again when the map grows).
/// A regular file is read again from its start; anything else (stdin, a pipe, a FIFO) is copied,
/// as the first pass reads it, to a private temporary file (mode 0600, unlinked at once, so no
/// exit leaves it behind), which later passes read.
///
/// Not `Sendable`: one command's input.
final class JSONLinesInput {
    /// Lines decoded before a batch is handed on.
    static let batchSize = 4_096
    /// Bytes read at a time.
    static let chunkSize = 1 << 20
    /// The longest line read (far above any event a store can hold).
    static let maxLineBytes = 64 << 20

    /// The name the messages use (the path, or `-`).
    let name: String
    private let descriptor: Int32
    /// The copy of a stream, once the first pass has read it whole.
    private var spool: Int32 = -1
    private var spooled = false
    private let seekable: Bool

    /// Opens `path` (`-`: stdin).
    init(path: String) throws {
        name = path
        if path == "-" {
            descriptor = dup(STDIN_FILENO)
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard descriptor >= 0 else { throw ReplayError("\(path): cannot be read (\(reason(errno)))") }
        var info = stat()
        seekable = path != "-" && fstat(descriptor, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        if !seekable {
            let template = FileManager.default.temporaryDirectory.appendingPathComponent("replay-import-XXXXXX").path
            var bytes = Array(template.utf8CString)
            spool = mkstemp(&bytes)
            guard spool >= 0 else {
                close(descriptor)
                throw ReplayError("\(path): cannot create a temporary copy of the input (\(reason(errno)))")
            }
            // Only the descriptor reaches it: nothing is left behind on any exit, a kill included.
            unlink(String(decoding: bytes.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    deinit {
        close(descriptor)
        if spool >= 0 { close(spool) }
    }

    /// Calls `body` with each batch of decoded envelopes and their line numbers (from 1), from the
    /// first line on; blank lines are skipped. With `skipping`, the first `skipping` lines that
    /// hold an event are read past without being decoded (a part of a parted import after the
    /// first: a pass before has decoded and checked them); `batchSize` (at most ``batchSize``)
    /// makes batches smaller, so that a part of fewer events ends where it should.
    ///
    /// - Throws: a ``ReplayError`` naming the line for a line that does not decode or is longer
    ///   than ``maxLineBytes``, or one naming the input when it cannot be read; what `body` throws.
    func forEachBatch(skipping: Int = 0, batchSize: Int = JSONLinesInput.batchSize,
                      _ body: (_ envelopes: [EventEnvelope], _ lines: [Int]) throws -> Void) throws {
        var toSkip = skipping
        let batchSize = max(1, min(batchSize, Self.batchSize))
        let source: Int32
        if seekable {
            source = descriptor
        } else if spooled {
            source = spool
        } else {
            source = descriptor
        }
        var offset: off_t = 0
        let copying = !seekable && !spooled
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.chunkSize)
        var start = 0, scanned = 0, atEnd = false, lineNumber = 0
        var envelopes: [EventEnvelope] = []
        var lines: [Int] = []
        envelopes.reserveCapacity(batchSize)
        lines.reserveCapacity(batchSize)

        func take(_ line: ArraySlice<UInt8>) throws {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { return }
            if toSkip > 0 {
                toSkip -= 1
                return
            }
            do {
                envelopes.append(try JSONEventCodec.decode(line))
                lines.append(lineNumber)
            } catch {
                throw ReplayError("\(name) line \(lineNumber): \(error); nothing was imported")
            }
            if envelopes.count == batchSize {
                try body(envelopes, lines)
                envelopes.removeAll(keepingCapacity: true)
                lines.removeAll(keepingCapacity: true)
            }
        }

        while true {
            if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
                try take(buffer[start..<newline])
                start = newline + 1
                scanned = start
                continue
            }
            if atEnd {
                if start < buffer.count { try take(buffer[start...]) }
                break
            }
            // No whole line left: keep the partial one, read the next piece after it.
            buffer.removeSubrange(0..<start)
            start = 0
            scanned = buffer.count
            guard buffer.count <= Self.maxLineBytes else {
                throw ReplayError("\(name) line \(lineNumber + 1): the line is longer than \(Self.maxLineBytes >> 20) MiB; nothing was imported")
            }
            let count = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: Self.chunkSize))
            let positioned = seekable || spooled
            let got = buffer.withUnsafeMutableBytes { raw -> Int in
                let target = raw.baseAddress! + count
                while true {
                    let n = positioned ? pread(source, target, Self.chunkSize, offset) : read(source, target, Self.chunkSize)
                    if n < 0 && errno == EINTR { continue }
                    return n
                }
            }
            guard got >= 0 else { throw ReplayError("\(name): cannot be read (\(reason(errno)))") }
            buffer.removeSubrange((count + got)...)
            offset += off_t(got)
            if got == 0 { atEnd = true }
            if copying && got > 0 {
                try buffer[count...].withUnsafeBytes { raw in
                    var done = 0
                    while done < raw.count {
                        let n = pwrite(spool, raw.baseAddress! + done, raw.count - done, offset - off_t(got) + off_t(done))
                        if n < 0 && errno == EINTR { continue }
                        guard n > 0 else { throw ReplayError("\(name): cannot write the temporary copy of the input (\(reason(errno)))") }
                        done += n
                    }
                }
            }
        }
        if !envelopes.isEmpty { try body(envelopes, lines) }
        if copying { spooled = true }
    }
}
