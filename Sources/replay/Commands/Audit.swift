import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    /// `replay audit`: the history in order, as text or JSON Lines.
    struct Audit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The full history in order: position, local time and zone, reader, event type and fields.",
            discussion: """
                --since and --until keep the events that occurred in the range (a date is a whole day in UTC).
                """)

        @OptionGroup var options: StoreOptions
        @Option(help: "Only this reader.", transform: ReaderID.parse) var reader: ReaderID?
        @Option(help: "Only this book (needs --reader).", transform: BookID.parse) var book: BookID?
        @OptionGroup var range: RangeOptions
        @Option(help: ArgumentHelp("Only events of this type tag (e.g. PagesRead).", valueName: "type"), transform: EventTypeTag.parse)
        var type: EventTypeTag?
        @Flag(help: "Print JSON Lines (the export format) instead of text.") var json = false

        func validate() throws {
            if book != nil, reader == nil { throw ValidationError("--book needs --reader") }
        }

        func run() throws {
            let store = try options.openExisting()
            func emit(_ e: EventEnvelope) {
                guard range.contains(e.occurredAt, zone: .utc) else { return }
                if let type, e.type.tag != type.tag { return }
                if json { print(JSONEventCodec.encodeLine(e)); return }
                let local = localTimeText(e.occurredAt, e.timeZone)
                print("\(e.position)\t\(local) \(printable(e.timeZone.identifier))\t\(e.reader)\t\(printable(e.type.description))\t\(printable(auditFields(e)))")
            }
            if let reader {
                for e in try store.auditTrail(reader: reader, book: book) { emit(e) }
            } else {
                try store.forEachEvent(from: 1) { e in emit(e); return true }
            }
        }
    }
}
