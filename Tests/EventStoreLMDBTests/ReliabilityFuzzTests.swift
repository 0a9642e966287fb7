import DemoHistory
import Foundation
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB

/// Random and mutated inputs through every decoder: the binary event codec (payload and record
/// forms), the JSON Lines codec, the log's record parser (`EventRecord.inspect`, with the payload
/// of any record it accepts decoded too) and every `ViewRecordCodec` decoder. Each either throws
/// its typed error or returns a value that survives a round trip; none traps. FUZZ_INPUTS sets
/// the total (CI 20,000; the long run 1,000,000).
@Suite struct ReliabilityFuzzTests {
    /// Valid inputs to mutate, built once.
    struct Corpus {
        var envelopes: [EventEnvelope] = []
        var binary: [[UInt8]] = []
        var records: [[UInt8]] = []
        var json: [[UInt8]] = []
        var logRecords: [(key: UInt64, bytes: [UInt8])] = []
        var views: [(kind: Int, bytes: [UInt8])] = []

        init() throws {
            envelopes = DemoHistory.generate(.init(readers: 2, days: 45, seed: 0xF022))
            var views = InMemoryViewStore()
            let projector = ReadingProjector(dayStartHour: 0)
            var previous = EventRecord.zeroHash
            for (index, var envelope) in envelopes.enumerated() {
                envelope.position = UInt64(index + 1)
                envelope.streamVersion = UInt64(index + 1)
                try projector.apply(envelope, to: &views)
                let payload = BinaryEventCodec.encode(envelope)
                binary.append(payload)
                records.append(BinaryEventCodec.encodeRecord(envelope))
                json.append(JSONEventCodec.encode(envelope))
                let record = EventRecord.encode(position: envelope.position, streamVersion: envelope.streamVersion,
                                                eventID: envelope.eventID.uuid, streamKey: try StreamKey(envelope.stream).encoded(),
                                                payload: payload, prevHash: previous)
                previous = EventRecord.hash(record)
                logRecords.append((envelope.position, record))
                envelopes[index] = envelope
            }
            let all = LocalDate(dayNumber: 0)...LocalDate(dayNumber: 40_000)
            for reader in try views.readers() {
                for view in try views.bookViews(reader: reader) {
                    self.views.append((0, ViewRecordCodec.encode(view)))
                    self.views.append((7, ViewRecordCodec.encode(view.decision)))
                    self.views.append((8, ViewRecordCodec.encodeSummary(view)))
                    // Detail chunks: a short one (the first 3) and every whole chunk.
                    func chunks<T>(_ details: [T], _ kind: Int, _ encode: (ArraySlice<T>) -> [UInt8]) {
                        if !details.isEmpty { self.views.append((kind, encode(details.prefix(3)))) }
                        for chunk in ViewRecordCodec.chunked(details) { self.views.append((kind, encode(chunk.details))) }
                    }
                    chunks(view.entries, 9, ViewRecordCodec.encodeEntryChunk)
                    chunks(view.sessions, 10, ViewRecordCodec.encodeSessionChunk)
                    chunks(view.sentences + view.memos, 11, ViewRecordCodec.encodeNoteChunk)
                }
                for (_, total) in try views.dayTotals(reader: reader, in: all) { self.views.append((1, ViewRecordCodec.encode(total))) }
                let months = YearMonth(LocalDate(dayNumber: 0))...YearMonth(LocalDate(dayNumber: 40_000))
                for (_, total) in try views.monthTotals(reader: reader, in: months) { self.views.append((2, ViewRecordCodec.encode(total))) }
                self.views.append((3, ViewRecordCodec.encode(try views.bucketTotals(reader: reader))))
                for run in try views.streakRuns(reader: reader) { self.views.append((4, ViewRecordCodec.encode(run))) }
                if let view = try views.readerView(reader: reader) { self.views.append((5, ViewRecordCodec.encode(view))) }
                for year in try views.yearViews(reader: reader) { self.views.append((6, ViewRecordCodec.encode(year))) }
            }
        }
    }

    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<7, using: &rng) {
            case 0 where !bytes.isEmpty:
                let i = Int.random(in: bytes.indices, using: &rng)
                bytes[i] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 1 where !bytes.isEmpty:
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
            case 2:
                bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            case 3 where !bytes.isEmpty:
                bytes[Int.random(in: bytes.indices, using: &rng)] = [0, 0xFF, 0x7F, 0x80, UInt8.random(in: 0...255, using: &rng)].randomElement(using: &rng)!
            case 4 where bytes.count > 1:
                bytes.remove(at: Int.random(in: bytes.indices, using: &rng))
            case 5 where bytes.count > 8:  // overwrite a run with large values (lengths, varints)
                let at = Int.random(in: 0..<(bytes.count - 8), using: &rng)
                for i in at..<(at + Int.random(in: 1...8, using: &rng)) { bytes[i] = 0xFF }
            default:
                guard !bytes.isEmpty else { continue }
                let a = Int.random(in: bytes.indices, using: &rng)
                let b = Int.random(in: a...min(bytes.count - 1, a + 20), using: &rng)
                bytes.insert(contentsOf: bytes[a...b], at: Int.random(in: 0...bytes.count, using: &rng))
            }
        }
        return bytes
    }

    static func randomBytes(_ rng: inout SplitMix64, max: Int = 200) -> [UInt8] {
        (0..<Int.random(in: 0...max, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    @Test func aMillionInputsThroughEveryDecoderGiveTypedErrorsOnly() throws {
        let total = Reliability.int("FUZZ_INPUTS", 20_000)
        let corpus = try Corpus()
        var rng = SplitMix64(seed: UInt64(Reliability.int("RELIABILITY_SEED", 0xF0_22)))
        let jsonAlphabet = Array(#"{}[]":,0123456789.-+eE truefalsnl\"#.utf8) + [0xEA, 0xB0, 0x80, 0xFF, 0xC0, 0xED, 0xA0]
        let names = ["binary random", "binary mutated", "record mutated", "JSON random", "JSON mutated",
                     "log record damaged", "view records mutated", "view records random"]
        var tried = [Int](repeating: 0, count: names.count)
        var accepted = [Int](repeating: 0, count: names.count)
        var damagedLogRecordsAccepted = 0
        let clock = ContinuousClock()
        let started = clock.now
        for i in 0..<total {
            let kind = i % names.count
            tried[kind] += 1
            let pick = Int.random(in: 0..<corpus.envelopes.count, using: &rng)
            let envelope = corpus.envelopes[pick]
            switch kind {
            case 0, 1:
                let bytes = kind == 0 ? Self.randomBytes(&rng) : Self.mutate(corpus.binary[pick], &rng)
                do {
                    let decoded = try BinaryEventCodec.decode(bytes, position: envelope.position, eventID: envelope.eventID,
                                                              stream: envelope.stream, streamVersion: envelope.streamVersion)
                    accepted[kind] += 1
                    let again = try BinaryEventCodec.decode(BinaryEventCodec.encode(decoded), position: decoded.position,
                                                            eventID: decoded.eventID, stream: decoded.stream, streamVersion: decoded.streamVersion)
                    #expect(again == decoded)
                } catch { #expect(!error.field.isEmpty && !error.detail.isEmpty) }
            case 2:
                do {
                    let decoded = try BinaryEventCodec.decodeRecord(Self.mutate(corpus.records[pick], &rng))
                    accepted[kind] += 1
                    #expect(try BinaryEventCodec.decodeRecord(BinaryEventCodec.encodeRecord(decoded)) == decoded)
                } catch { #expect(!error.field.isEmpty) }
            case 3, 4:
                let line = kind == 3
                    ? (0..<Int.random(in: 0...100, using: &rng)).map { _ in jsonAlphabet.randomElement(using: &rng)! }
                    : Self.mutate(corpus.json[pick], &rng)
                do {
                    let decoded = try JSONEventCodec.decode(line)
                    accepted[kind] += 1
                    #expect(try JSONEventCodec.decode(JSONEventCodec.encode(decoded)) == decoded)
                } catch { #expect(!error.field.isEmpty && !error.detail.isEmpty) }
            case 5:
                let (key, original) = corpus.logRecords[pick]
                let damaged = Self.mutate(original, &rng)
                let result = damaged.withUnsafeBytes { EventRecord.inspect($0, key: key) }
                // The migration's decoder of the older layout survives the same bytes.
                if case .failure(let damage) = damaged.withUnsafeBytes({ EventRecord.inspectLegacy($0, key: key) }) {
                    #expect(!damage.reason.isEmpty)
                }
                switch result {
                case .success(let record):
                    accepted[kind] += 1
                    if damaged != original { damagedLogRecordsAccepted += 1 }
                    // What the parser accepts goes on to the payload decoder, as in ReadingStore.
                    do { _ = try ReadingStore.envelope(of: record) } catch {
                        #expect(error is EventStoreError)
                    }
                case .failure(let damage):
                    #expect(!damage.reason.isEmpty)
                }
            default:
                let (viewKind, original) = corpus.views[Int.random(in: 0..<corpus.views.count, using: &rng)]
                let format = switch viewKind {
                case 7: ViewRecordCodec.decisionFormat
                case 8: ViewRecordCodec.summaryFormat
                case 9, 10, 11: ViewRecordCodec.chunkFormat
                default: ViewRecordCodec.format
                }
                let bytes = kind == 6 ? Self.mutate(original, &rng) : [format] + Self.randomBytes(&rng, max: 120)
                do {
                    switch viewKind {
                    case 0: let v = try ViewRecordCodec.decodeBookView(bytes); #expect(try ViewRecordCodec.decodeBookView(ViewRecordCodec.encode(v)) == v)
                    case 1: let v = try ViewRecordCodec.decodeDayTotal(bytes); #expect(try ViewRecordCodec.decodeDayTotal(ViewRecordCodec.encode(v)) == v)
                    case 2: let v = try ViewRecordCodec.decodeMonthTotal(bytes); #expect(try ViewRecordCodec.decodeMonthTotal(ViewRecordCodec.encode(v)) == v)
                    case 3: let v = try ViewRecordCodec.decodeBucketTotals(bytes); #expect(try ViewRecordCodec.decodeBucketTotals(ViewRecordCodec.encode(v)) == v)
                    case 4: let v = try ViewRecordCodec.decodeStreakRun(bytes); #expect(try ViewRecordCodec.decodeStreakRun(ViewRecordCodec.encode(v)) == v)
                    case 5: let v = try ViewRecordCodec.decodeReaderView(bytes); #expect(try ViewRecordCodec.decodeReaderView(ViewRecordCodec.encode(v)) == v)
                    case 6: let v = try ViewRecordCodec.decodeYearView(bytes); #expect(try ViewRecordCodec.decodeYearView(ViewRecordCodec.encode(v)) == v)
                    case 7: let v = try ViewRecordCodec.decodeBookState(bytes); #expect(try ViewRecordCodec.decodeBookState(ViewRecordCodec.encode(v)) == v)
                    case 8:
                        let v = try ViewRecordCodec.decodeBookSummary(bytes).view
                        #expect(try ViewRecordCodec.decodeBookSummary(ViewRecordCodec.encodeSummary(v)).view == v)
                    case 9: let v = try ViewRecordCodec.decodeEntryChunk(bytes); #expect(try ViewRecordCodec.decodeEntryChunk(ViewRecordCodec.encodeEntryChunk(v[...])) == v)
                    case 10: let v = try ViewRecordCodec.decodeSessionChunk(bytes); #expect(try ViewRecordCodec.decodeSessionChunk(ViewRecordCodec.encodeSessionChunk(v[...])) == v)
                    default: let v = try ViewRecordCodec.decodeNoteChunk(bytes); #expect(try ViewRecordCodec.decodeNoteChunk(ViewRecordCodec.encodeNoteChunk(v[...])) == v)
                    }
                    accepted[kind] += 1
                } catch { #expect(!error.field.isEmpty && !error.problem.isEmpty) }
            }
        }
        #expect(damagedLogRecordsAccepted == 0, "the log's record parser accepted damaged records")
        let elapsed = started.duration(to: clock.now)
        let breakdown = names.indices.map { "\(names[$0]) \(tried[$0]) (accepted \(accepted[$0]))" }.joined(separator: ", ")
        Reliability.report("fuzz", "\(total) inputs in \(Reliability.seconds(elapsed)), no trap; \(breakdown); damaged log records accepted: \(damagedLogRecordsAccepted)")
    }
}
