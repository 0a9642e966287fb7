import ArgumentParser
import EventStoreLMDB
import Foundation

extension Replay {
    /// `replay stats`: counts and sizes of the store.
    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Events per type and per reader, file and map size, last position, view checkpoints.")

        @OptionGroup var options: StoreOptions
        @Flag(help: "Print the statistics as JSON.") var json = false

        /// The `--json` output.
        struct Output: Encodable {
            let eventsPerType: [String: Int]
            let eventsPerReader: [String: Int]
            let fileBytes: Int
            let mapBytes: Int
            let lastPosition: UInt64
            let viewCheckpoint: UInt64
            let dayStartHour: Int
        }

        func run() throws {
            let store = try options.openExisting()
            var perType: [String: Int] = [:]
            var perReader: [String: Int] = [:]
            try store.forEachEvent(from: 1) { envelope in
                perType[envelope.type.tag, default: 0] += 1
                perReader[envelope.reader.description, default: 0] += 1
                return true
            }
            let fileSize = (try? FileManager.default.attributesOfItem(atPath: options.url.appendingPathComponent("data.mdb").path)[.size] as? Int) ?? 0
            let last = try store.lastPosition()
            let checkpoint = try store.viewCheckpoint()
            if json {
                try printJSON(Output(eventsPerType: perType, eventsPerReader: perReader, fileBytes: fileSize,
                                     mapBytes: store.mapSize, lastPosition: last, viewCheckpoint: checkpoint,
                                     dayStartHour: store.dayStartHour))
            } else {
                print("last position \(last) · view checkpoint \(checkpoint) · data.mdb \(fileSize) bytes · map \(store.mapSize) bytes · day starts at \(store.dayStartHour):00")
                print("events per type:")
                for (type, count) in perType.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) { print("  \(type): \(count)") }
                print("events per reader:")
                for (reader, count) in perReader.sorted(by: { $0.key < $1.key }) { print("  \(reader): \(count)") }
            }
        }
    }
}
