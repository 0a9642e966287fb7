import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    /// `replay export`: the history as JSON Lines on stdout.
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the history as JSON Lines on stdout (one envelope per line; see the README for the format).")

        @OptionGroup var options: StoreOptions
        @Option(help: "Only this reader's events.", transform: ReaderID.parse) var reader: ReaderID?
        @Option(help: ArgumentHelp(
            "Only what a store with this version vector lacks, in canonical order (`replay sync vector` prints a store's; \"\" for a new store): a file transport for `replay import` on the other side.",
            valueName: "replica:sequence,..."), transform: VersionVector.parse)
        var sinceVector: VersionVector?
        @OptionGroup var worker: WorkerOption

        func run() throws {
            // As for `verify`: a damaged data file can make LMDB itself stop; report it as damage.
            guard try worker.isWorker(store: options.url) else { return }
            let store = try options.openExisting()
            let out = FileHandle.standardOutput
            var buffer: [UInt8] = []
            func flush() { out.write(Data(buffer)); buffer.removeAll(keepingCapacity: true) }
            func emit(_ e: EventEnvelope) {
                buffer += JSONEventCodec.encode(e); buffer.append(0x0A)
                if buffer.count > 1 << 20 { flush() }
            }
            if let sinceVector {
                var after: EventOrigin?
                while true {
                    let page = try store.changes(since: sinceVector, after: after, limit: 10_000)
                    guard let last = page.last else { break }
                    for e in page where reader.map({ $0 == e.reader }) ?? true { emit(e) }
                    after = last.origin
                }
            } else if let reader {
                for e in try store.auditTrail(reader: reader) { emit(e) }
            } else {
                try store.forEachEvent(from: 1) { e in emit(e); return true }
            }
            flush()
        }
    }
}
