import Foundation
import ReadingEvents

/// An import's events, staged on disk as they are made so that memory does not grow with the
/// file: each envelope is written once (its stream name, then the log's own stored value,
/// ``BinaryEventCodec/encode(_:)``, read back by the log's fast decoder) to a private temporary
/// file (mode 0600; reading history is personal), and only its order key, book number and place
/// in the file stay in memory (24 bytes an event; the event ID is staged with the event). The file is unlinked as soon as it is created
/// (only its descriptor reaches it) and closed when the last ``ImportResult`` holding it is
/// released, so no exit, a kill included, leaves it behind.
///
/// `Sendable`: immutable after ``Writer/finish()`` (the file is only read, with `pread`, which
/// keeps no shared offset).
final class StagedEvents: Sendable {
    /// Where one envelope is, and where it sorts.
    struct Entry {
        var key: Int64
        var offset: Int64
        var length: UInt32
        var book: Int32
    }

    let url: URL
    private let descriptor: Int32
    /// The entries in append order (see ``ImportPlan/result()``).
    let entries: [Entry]

    private init(url: URL, descriptor: Int32, entries: [Entry]) {
        self.url = url; self.descriptor = descriptor; self.entries = entries
    }

    deinit { close(descriptor) }

    var count: Int { entries.count }

    /// Calls `body` with the envelopes in order, `size` at a time, from the one at `skipping` on.
    func forEachBatch(of size: Int, skipping: Int = 0, _ body: ([EventEnvelope]) throws -> Void) throws {
        var batch: [EventEnvelope] = []
        batch.reserveCapacity(min(size, entries.count))
        var bytes: [UInt8] = []
        for entry in entries.dropFirst(skipping) {
            bytes = [UInt8](repeating: 0, count: Int(entry.length))
            let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(entry.offset)) }
            guard read == Int(entry.length) else {
                throw ImportError.unreadable(path: url.path, detail: "the staged events could not be read back: \(String(cString: strerror(errno)))")
            }
            // The stream's name (its length in the first byte), the event ID, then the stored value.
            let nameLength = Int(bytes[0])
            guard nameLength + 17 <= bytes.count, let stream = StreamID(String(decoding: bytes[1...nameLength], as: UTF8.self)) else {
                throw ImportError.unreadable(path: url.path, detail: "the staged events are damaged")
            }
            let i = nameLength + 1
            let eventID = UUID(uuid: (bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3], bytes[i + 4], bytes[i + 5], bytes[i + 6], bytes[i + 7],
                                      bytes[i + 8], bytes[i + 9], bytes[i + 10], bytes[i + 11], bytes[i + 12], bytes[i + 13], bytes[i + 14], bytes[i + 15]))
            let envelope = try bytes[(i + 16)...].withUnsafeBytes { value in
                try BinaryEventCodec.decode(value, position: 0, eventID: EventID(eventID), stream: stream, streamVersion: 0)
            }
            batch.append(envelope)
            if batch.count == size {
                try body(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try body(batch) }
    }

    /// Writes envelopes to the staging file as they come, buffered.
    ///
    /// Not `Sendable`: one import's writer.
    final class Writer {
        private let url: URL
        private var descriptor: Int32 = -1
        private var buffer: [UInt8] = []
        private var written: Int64 = 0
        private(set) var entries: [Entry] = []
        /// The first write error; the import fails with it at ``finish()``.
        private var failure: ImportError?

        init(in directory: URL?) {
            url = (directory ?? FileManager.default.temporaryDirectory)
                .appendingPathComponent("reading-import-staged-\(UUID().uuidString)")
            descriptor = open(url.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor < 0 { failure = .unreadable(path: url.path, detail: "cannot create the staging file: \(String(cString: strerror(errno)))") }
            // Unlinked at once: only the descriptor reaches it, so nothing is left behind on any
            // exit, a killed process included.
            else { unlink(url.path) }
            buffer.reserveCapacity(1 << 20)
        }

        deinit {
            // Not finished (an import that failed).
            if descriptor >= 0 { close(descriptor) }
        }

        func append(_ envelope: EventEnvelope, book: Int, key: Timestamp) {
            guard failure == nil else { return }
            let name = Array(envelope.stream.description.utf8)
            let value = BinaryEventCodec.encode(envelope)
            let id = envelope.eventID.uuid.uuid
            let offset = written + Int64(buffer.count)
            buffer.append(UInt8(name.count))
            buffer.append(contentsOf: name)
            buffer.append(contentsOf: [id.0, id.1, id.2, id.3, id.4, id.5, id.6, id.7, id.8, id.9, id.10, id.11, id.12, id.13, id.14, id.15])
            buffer.append(contentsOf: value)
            entries.append(Entry(key: key.microseconds, offset: offset, length: UInt32(written + Int64(buffer.count) - offset),
                                 book: Int32(truncatingIfNeeded: book)))
            if buffer.count >= 1 << 20 { flush() }
        }

        private func flush() {
            guard failure == nil, !buffer.isEmpty else { return }
            var done = 0
            while done < buffer.count {
                let n = buffer.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, $0.count - done, off_t(written + Int64(done))) }
                guard n > 0 else {
                    failure = .unreadable(path: url.path, detail: "cannot write the staging file: \(String(cString: strerror(errno)))")
                    return
                }
                done += n
            }
            written += Int64(buffer.count)
            buffer.removeAll(keepingCapacity: true)
        }

        /// The staged events in the order `areInOrder` gives (sorted in place: an entry's offset
        /// grows with the order of appending, so it breaks ties as that order), or the first write error.
        func finish(ordered areInOrder: (Entry, Entry) -> Bool) throws(ImportError) -> StagedEvents {
            flush()
            if let failure { throw failure }
            entries.sort(by: areInOrder)
            let ordered = entries
            entries = []
            let staged = StagedEvents(url: url, descriptor: descriptor, entries: ordered)
            descriptor = -1   // owned by `staged` now
            return staged
        }
    }
}
