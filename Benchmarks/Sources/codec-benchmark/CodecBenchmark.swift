// Decode and encode rates of the storage codec (protobuf) and the exchange codec (JSON Lines),
// measured side by side in one run on the same seeded mix of events, so the ratio holds on a
// noisy machine. Single-threaded; median of several rounds.
import Foundation
@_spi(Benchmarks) import ReadingEvents

/// Median events per second of one operation.
struct Rate {
    var wall: Double
    var cpu: Double
}

@main
struct CodecBenchmark {
    static func main() throws {
        // MARK: A seeded, realistic mix

        let arguments = CommandLine.arguments.dropFirst()
        let eventCount = arguments.first.flatMap(Int.init) ?? 200_000
        let rounds = 5

        var rng = SplitMix64(seed: 20_260_301)
        func uuid() -> UUID {
            let a = rng.next(), b = rng.next()
            return withUnsafeBytes(of: (a, b)) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        }

        let sentences = [
            "그러나 나는 이제 알 것 같았다. 그 모든 것이 결국 하나의 질문이었다는 것을.",
            "우리는 모두 각자의 속도로 자란다. 그것을 기다려 주는 것이 사랑이다.",
            "책을 덮고 나서도 한참 동안 창밖을 바라보았다. 비가 그치고 있었다.",
            "The only way out is through, and the only way through is one page at a time.",
            "어떤 문장은 밑줄을 긋는 순간 내 것이 된다 — 그래서 나는 연필을 놓지 못한다. 📚",
        ]
        let memo = String(repeating: "오늘은 퇴근길 지하철에서 삼십 쪽을 읽었다. 주인공의 선택이 이해되면서도 답답했다. ", count: 4)
        let zones = ["Asia/Seoul", "Asia/Seoul", "Asia/Seoul", "Asia/Tokyo", "America/Los_Angeles", "Europe/Berlin"]
        let readers = (0..<20).map { _ in ReaderID(uuid()) }
        let books = (0..<400).map { _ in BookID(uuid()) }

        func metadata() -> BookMetadata {
            BookMetadata(
                title: "채식주의자", subtitle: "한강 연작소설", authors: "한강 (지은이), Deborah Smith (옮긴이)", publisher: "창비",
                publicationDate: LocalDate(dayNumber: 19_000 + Int(rng.next() % 2000)), isbn13: try! ISBN13("9788936434120"),
                pageCount: 247, categoryPath: "국내도서>소설/시/희곡>한국소설>2000년대 이후 한국소설",
                coverURL: "https://image.aladin.co.kr/product/5000/0/cover500/8936434128_2.jpg",
                productLink: "https://www.aladin.co.kr/shop/wproduct.aspx?ItemId=5000000", thicknessMillimetres: 15.5)
        }

        func event(book: BookID) -> ReadingEvent {
            let roll = rng.next() % 1000
            let session = SessionID(uuid())
            switch roll {
            case 0..<450: return .pagesRead(PagesRead(book: book, position: Int(rng.next() % 500)))
            case 450..<520: return .sessionStarted(SessionStarted(session: session, book: book))
            case 520..<560: return .sessionPaused(SessionPaused(session: session, book: book))
            case 560..<600: return .sessionResumed(SessionResumed(session: session, book: book))
            case 600..<700:
                return .sessionFinished(SessionFinished(session: session, book: book, endPosition: Int(rng.next() % 500),
                                                        durationSeconds: Int(rng.next() % 7200)))
            case 700..<780:
                return .sentenceCollected(SentenceCollected(sentence: SentenceID(uuid()), book: book,
                                                            text: sentences[Int(rng.next() % 5)], page: Int(rng.next() % 500)))
            case 780..<830:
                return .memoWritten(MemoWritten(memo: MemoID(uuid()), book: book, text: memo, page: nil))
            case 830..<850: return .bookAdded(BookAdded(book: book, metadata: metadata(), status: .reading))
            case 850..<880:
                return .goalSet(GoalSet(book: book, startDate: LocalDate(dayNumber: 20_500),
                                        targetDate: LocalDate(dayNumber: 20_530), theme: "orange"))
            case 880..<910: return .bookFinished(BookFinished(book: book, finishedOn: LocalDate(dayNumber: 20_520)))
            case 910..<940: return .ratingSet(RatingSet(book: book, rating: try! Rating(quarters: 1 + Int(rng.next() % 20))))
            case 940..<970: return .bookLiked(BookLiked(book: book))
            default: return .progressCorrected(ProgressCorrected(book: book, position: Int(rng.next() % 100)))
            }
        }

        var envelopes: [EventEnvelope] = []
        envelopes.reserveCapacity(eventCount)
        var instant: Int64 = 1_772_368_200_000_000
        for position in 1...eventCount {
            let reader = readers[Int(rng.next() % 20)]
            let e = event(book: books[Int(rng.next() % 400)])
            instant += Int64(rng.next() % 600_000_000)
            envelopes.append(EventEnvelope(
                position: UInt64(position), eventID: EventID(uuid()), streamVersion: UInt64(1 + rng.next() % 500),
                reader: reader, occurredAt: Timestamp(microseconds: instant), timeZone: ZoneID(unchecked: zones[Int(rng.next() % 6)]),
                recordedAt: Timestamp(microseconds: instant + 1_000), event: e,
                correlationID: rng.next() % 10 == 0 ? EventID(uuid()) : nil))
        }

        // MARK: Measuring

        let clock = ContinuousClock()
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        func median(_ xs: [Double]) -> Double { let s = xs.sorted(); return s[s.count / 2] }

        /// CPU time of this thread: unlike the wall clock, it does not count time the thread waits
        /// for a core, so it stays meaningful on a busy, shared machine.
        func threadCPUSeconds() -> Double {
            var ts = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }

        /// Runs `body` `rounds` times; returns the median rates in events per second, by the wall
        /// clock and by the thread's CPU time.
        func measure(_ count: Int, _ body: () throws -> Int) rethrows -> Rate {
            var wall: [Double] = [], cpu: [Double] = []
            var sink = 0
            for _ in 0..<rounds {
                let start = clock.now
                let cpuStart = threadCPUSeconds()
                sink &+= try body()
                cpu.append(Double(count) / (threadCPUSeconds() - cpuStart))
                wall.append(Double(count) / seconds(clock.now - start))
            }
            if sink == 42 { print("") }  // keeps the work observable
            return Rate(wall: median(wall), cpu: median(cpu))
        }

        // Stored values laid out back to back in one buffer, as a memory map presents them.
        var binaryValues: [[UInt8]] = []
        let binaryEncodeRate = measure(eventCount) {
            binaryValues = envelopes.map(BinaryEventCodec.encode)
            return binaryValues.count
        }
        var arena: [UInt8] = []
        var ranges: [Range<Int>] = []
        for value in binaryValues { ranges.append(arena.count..<arena.count + value.count); arena += value }

        // What the log keeps in its keys and passes back to the codec.
        struct RecordKey { let position: UInt64; let eventID: EventID; let stream: StreamID; let streamVersion: UInt64 }
        let keys = envelopes.map {
            RecordKey(position: $0.position, eventID: $0.eventID, stream: $0.stream, streamVersion: $0.streamVersion)
        }
        let valueRanges = ranges  // immutable captures: no exclusivity checks in the timed loop
        let binaryDecodeRate = try arena.withUnsafeBytes { map in
            try measure(eventCount) {
                var checksum = 0
                for index in valueRanges.indices {
                    let key = keys[index]
                    let decoded = try BinaryEventCodec.decode(UnsafeRawBufferPointer(rebasing: map[valueRanges[index]]),
                                                              position: key.position, eventID: key.eventID,
                                                              stream: key.stream, streamVersion: key.streamVersion)
                    checksum &+= Int(truncatingIfNeeded: decoded.occurredAt.microseconds)
                }
                return checksum
            }
        }

        // The same values through the swift-protobuf path alone (what decode did before the
        // fast path, and still does for records the fast path does not read).
        let swiftProtobufDecodeRate = try arena.withUnsafeBytes { map in
            try measure(eventCount) {
                var checksum = 0
                for index in valueRanges.indices {
                    let key = keys[index]
                    let decoded = try BinaryEventCodec.decodeWithSwiftProtobuf(
                        UnsafeRawBufferPointer(rebasing: map[valueRanges[index]]), position: key.position,
                        eventID: key.eventID, stream: key.stream, streamVersion: key.streamVersion)
                    checksum &+= Int(truncatingIfNeeded: decoded.occurredAt.microseconds)
                }
                return checksum
            }
        }

        // `codec-benchmark <count> binary`: the binary rates only (for a profiler).
        if arguments.dropFirst().first == "binary" {
            print("binary decode \(Int(binaryDecodeRate.wall)) events/s (CPU time: \(Int(binaryDecodeRate.cpu))), "
                  + "swift-protobuf path only \(Int(swiftProtobufDecodeRate.wall)) events/s (CPU time: \(Int(swiftProtobufDecodeRate.cpu))), "
                  + "encode \(Int(binaryEncodeRate.wall)) events/s (CPU time: \(Int(binaryEncodeRate.cpu)))")
            return
        }

        var jsonLines: [[UInt8]] = []
        let jsonEncodeRate = measure(eventCount) {
            jsonLines = envelopes.map(JSONEventCodec.encode)
            return jsonLines.count
        }

        let jsonDecodeRate = try measure(eventCount) {
            var checksum = 0
            for line in jsonLines {
                checksum &+= Int(truncatingIfNeeded: try JSONEventCodec.decode(line).position)
            }
            return checksum
        }

        // Correctness of what was measured.
        for (index, range) in ranges.enumerated() where index % 997 == 0 {
            let e = envelopes[index]
            let fromBinary = try BinaryEventCodec.decode(Array(arena[range]), position: e.position, eventID: e.eventID,
                                                         stream: e.stream, streamVersion: e.streamVersion)
            let fromJSON = try JSONEventCodec.decode(jsonLines[index])
            let fromSwiftProtobuf = try arena.withUnsafeBytes { map in
                try BinaryEventCodec.decodeWithSwiftProtobuf(UnsafeRawBufferPointer(rebasing: map[range]),
                                                             position: e.position, eventID: e.eventID,
                                                             stream: e.stream, streamVersion: e.streamVersion)
            }
            precondition(fromBinary == e && fromJSON == e && fromSwiftProtobuf == e,
                         "a codec did not round-trip event \(index)")
        }

        func cell(_ value: Double, _ width: Int) -> String {
            let text = String(Int(value.rounded()))
            return String(repeating: " ", count: max(0, width - text.count)) + text
        }
        func row(_ name: String, _ rate: Rate) -> String {
            name.padding(toLength: 16, withPad: " ", startingAt: 0)
                + cell(rate.wall, 12) + cell(1e9 / rate.wall, 10) + cell(rate.cpu, 14) + cell(1e9 / rate.cpu, 10)
        }

        var kinds: [String: Int] = [:]
        for e in envelopes { kinds[e.type.tag, default: 0] += 1 }
        let binaryBytes = Double(arena.count) / Double(eventCount)
        let jsonBytes = Double(jsonLines.reduce(0) { $0 + $1.count }) / Double(eventCount)

        print("codec-benchmark: \(eventCount) events, median of \(rounds) rounds, one thread")
        print("mix: " + kinds.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        print("average size: binary \(Int(binaryBytes.rounded())) B, JSON \(Int(jsonBytes.rounded())) B")
        print("")
        print("                    wall clock            thread CPU time")
        print("operation           events/s  ns/event      events/s  ns/event")
        print(row("binary decode", binaryDecodeRate))
        print(row("  protobuf only", swiftProtobufDecodeRate))
        print(row("JSON decode", jsonDecodeRate))
        print(row("binary encode", binaryEncodeRate))
        print(row("JSON encode", jsonEncodeRate))
        print("")
        func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.1fx", a / b) }
        print("binary/JSON decode: \(ratio(binaryDecodeRate.wall, jsonDecodeRate.wall)) (wall), "
              + "\(ratio(binaryDecodeRate.cpu, jsonDecodeRate.cpu)) (CPU)")
        print("binary decode, fast path/protobuf only: \(ratio(binaryDecodeRate.wall, swiftProtobufDecodeRate.wall)) (wall), "
              + "\(ratio(binaryDecodeRate.cpu, swiftProtobufDecodeRate.cpu)) (CPU)")
        print("binary/JSON encode: \(ratio(binaryEncodeRate.wall, jsonEncodeRate.wall)) (wall), "
              + "\(ratio(binaryEncodeRate.cpu, jsonEncodeRate.cpu)) (CPU)")
        var load = [0.0, 0.0, 0.0]
        if getloadavg(&load, 3) == 3 { print(String(format: "load average during the run: %.2f (2 shared cores here)", load[0])) }
    }
}
