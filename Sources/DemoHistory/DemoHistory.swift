import Foundation
import ReadingEvents

/// A realistic, seeded and deterministic reading history: several readers in several time zones,
/// months of daily reading, timed sessions (some paused, some across midnight, some left open),
/// sentences, memos, ratings, likes, finishes with goals met and missed, a re-read, a
/// did-not-finish, back-dated entries and corrections.
///
/// Every event is produced by the decide step of ReadingEvents, so the history is one a real host
/// could have written. The same options always give the same envelopes (event IDs included).
///
/// `Sendable`: a namespace.
public enum DemoHistory {
    /// What to generate.
    ///
    /// `Sendable`: plain values.
    public struct Options: Sendable, Hashable {
        /// Number of readers.
        public var readers: Int
        /// Days of history per reader.
        public var days: Int
        /// The seed of every random choice.
        public var seed: UInt64
        /// The first day of the history.
        public var firstDay: LocalDate
        /// The index of the first reader (readers are numbered; zones and titles rotate by index),
        /// so a large history can be generated in batches of readers.
        public var firstReaderIndex: Int
        /// Creates options; defaults give about 4 readers × 180 days (a few thousand events).
        public init(readers: Int = 4, days: Int = 180, seed: UInt64 = 20_261_121,
                    firstDay: LocalDate = LocalDate(dayNumber: 20_089),   // 2025-01-01
                    firstReaderIndex: Int = 0) {
            self.readers = readers; self.days = days; self.seed = seed; self.firstDay = firstDay
            self.firstReaderIndex = firstReaderIndex
        }
    }

    /// The zones readers live in, in turn.
    public static let zones = ["Asia/Seoul", "America/Los_Angeles", "Europe/Berlin", "America/New_York",
                               "Australia/Sydney", "Asia/Kolkata", "Pacific/Auckland", "America/Sao_Paulo"]

    static let titles: [(String, String, String, Int)] = [
        ("채식주의자", "한강 (지은이)", "국내도서>소설/시/희곡>한국소설", 247),
        ("소년이 온다", "한강 (지은이)", "국내도서>소설/시/희곡>한국소설", 216),
        ("아몬드", "손원평 (지은이)", "국내도서>소설/시/희곡>한국소설", 264),
        ("불편한 편의점", "김호연 (지은이)", "국내도서>소설/시/희곡>한국소설", 268),
        ("코스모스", "칼 세이건 (지은이), 홍승수 (옮긴이)", "국내도서>과학>천문학", 719),
        ("사피엔스", "유발 하라리 (지은이), 조현욱 (옮긴이)", "국내도서>역사>세계사", 636),
        ("이기적 유전자", "리처드 도킨스 (지은이), 홍영남 (옮긴이)", "국내도서>과학>생명과학", 632),
        ("데미안", "헤르만 헤세 (지은이), 전영애 (옮긴이)", "국내도서>소설/시/희곡>독일소설", 240),
        ("어린 왕자", "앙투안 드 생텍쥐페리 (지은이)", "국내도서>소설/시/희곡>프랑스소설", 144),
        ("총, 균, 쇠", "재레드 다이아몬드 (지은이), 김진준 (옮긴이)", "국내도서>역사>세계사", 752),
        ("미움받을 용기", "기시미 이치로, 고가 후미타케 (지은이)", "국내도서>인문학>심리학", 336),
        ("달러구트 꿈 백화점", "이미예 (지은이)", "국내도서>소설/시/희곡>한국소설", 300),
        ("The Pragmatic Programmer", "David Thomas, Andrew Hunt", "외국도서>Computers>Programming", 352),
        ("82년생 김지영", "조남주 (지은이)", "국내도서>소설/시/희곡>한국소설", 192),
    ]

    static let sentences = ["사람은 누구나 꽃이다.", "우리는 모두 별의 먼지로 만들어졌다.", "새는 알에서 나오려고 투쟁한다.",
                            "가장 중요한 것은 눈에 보이지 않아.", "It is a truth universally acknowledged.", "오늘도 한 페이지."]

    /// Generates the history, in the order a store would have recorded it (by `recordedAt`).
    /// The replica ID of a demo store written with these parameters: the same parameters give
    /// byte-identical stores and exports; another seed, number of readers, length or event count
    /// gives another replica, so two different demo stores are never taken for copies of one.
    public static func replica(seed: UInt64, readers: Int, days: Int, events: Int?) -> ReplicaID {
        var generator = SplitMix64(seed: seed)
        var mixed = generator.next()
        for value in [readers, days, events ?? 0] {
            generator = SplitMix64(seed: mixed ^ UInt64(truncatingIfNeeded: value))
            mixed = generator.next()
        }
        return replica(seed: mixed)
    }

    /// The replica ID of a demo store written with `seed` (a version-4 UUID from the seed), so the
    /// same seed gives byte-identical stores and exports; different seeds give different replicas.
    public static func replica(seed: UInt64) -> ReplicaID {
        var generator = SplitMix64(seed: seed ^ 0x7265_706C_6963_6121)  // "replica!"
        var bytes = [UInt8](repeating: 0, count: 16)
        for half in 0..<2 {
            let word = generator.next()
            for i in 0..<8 { bytes[half * 8 + i] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(i))) }
        }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return ReplicaID(bytes: bytes)!
    }

    public static func generate(_ options: Options = Options()) -> [EventEnvelope] {
        var perReader: [[EventEnvelope]] = []
        for index in options.firstReaderIndex..<(options.firstReaderIndex + options.readers) {
            var generator = ReaderGenerator(index: index, options: options)
            generator.run()
            perReader.append(generator.envelopes)
        }
        // Interleave readers as a shared store would see them, each reader's events staying in
        // the order they were decided: always take the reader whose next event was recorded first.
        var cursors = [Int](repeating: 0, count: perReader.count)
        var merged: [EventEnvelope] = []
        merged.reserveCapacity(perReader.reduce(0) { $0 + $1.count })
        while true {
            var best: Int?
            for r in perReader.indices where cursors[r] < perReader[r].count {
                if let b = best, perReader[b][cursors[b]].recordedAt <= perReader[r][cursors[r]].recordedAt { continue }
                best = r
            }
            guard let r = best else { break }
            merged.append(perReader[r][cursors[r]])
            cursors[r] += 1
        }
        return merged
    }

    /// The generator's draws, on the package's seeded ``SplitMix64``.
    struct Random {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func next() -> UInt64 { generator.next() }
        mutating func int(_ range: ClosedRange<Int>) -> Int {
            range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
        }
        mutating func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) / 1_000_000 < p }
        mutating func uuid() -> UUID {
            var bytes = (0..<2).flatMap { _ -> [UInt8] in let v = next(); return (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
            bytes[6] = bytes[6] & 0x0F | 0x40; bytes[8] = bytes[8] & 0x3F | 0x80
            return UUID(bytes: bytes)!
        }
    }

    struct ReaderGenerator {
        let options: Options
        let reader: ReaderID
        let zone: String
        var random: Random
        var envelopes: [EventEnvelope] = []
        var books: [BookID: BookState] = [:]
        var reading: [BookID] = []
        var finished: [BookID] = []
        var openSession: (book: BookID, session: SessionID)?
        var reReadDone = false
        var didNotFinishDone = false
        var titleCursor: Int

        init(index: Int, options: Options) {
            self.options = options
            var random = Random(state: options.seed &+ UInt64(index) &* 0x1000_0000_01B3)
            reader = ReaderID(random.uuid())
            zone = DemoHistory.zones[index % DemoHistory.zones.count]
            titleCursor = index * 3
            self.random = random
        }

        /// The instant of a local wall-clock time on a day in the reader's zone.
        func instant(_ day: LocalDate, hour: Int, minute: Int) -> Timestamp {
            let tz = TimeZone(identifier: zone)!
            let naive = Int64(day.dayNumber) * 86_400 + Int64(hour * 3600 + minute * 60)
            let offset = tz.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(naive)))
            return Timestamp(microseconds: (naive - Int64(offset)) * 1_000_000)
        }

        mutating func emit(_ command: BookCommand, book: BookID, at: Timestamp, recordedAt: Timestamp? = nil) {
            var state = books[book] ?? BookState()
            let events: [ReadingEvent]
            do { events = try command.decide(for: book, in: state, at: at) } catch {
                // The generator only asks for valid commands; a rejection is a bug in it (debug
                // builds, and so the tests, stop here; a release build skips the command).
                assertionFailure("demo history: \(command) was rejected: \(error)")
                return
            }
            guard !events.isEmpty else { return }
            let context = CommandContext(reader: reader, occurredAt: at, timeZone: zone, recordedAt: recordedAt ?? at,
                                         commandID: EventID(random.uuid()))
            guard let made = try? context.envelopes(for: events) else { return }
            for envelope in made { state.apply(envelope.event, occurredAt: at) }
            books[book] = state
            envelopes += made
        }

        mutating func emit(_ command: ReaderCommand, at: Timestamp) {
            guard let events = try? command.decide(in: ReaderState()),
                  let made = try? CommandContext(reader: reader, occurredAt: at, timeZone: zone, commandID: EventID(random.uuid())).envelopes(for: events)
            else { return }
            envelopes += made
        }

        mutating func addBook(on day: LocalDate, at: Timestamp) -> BookID {
            let (title, authors, category, pages) = DemoHistory.titles[titleCursor % DemoHistory.titles.count]
            titleCursor += 1
            let book = BookID(random.uuid())
            let metadata = BookMetadata(title: title, authors: authors, publisher: "출판사", categoryPath: category,
                                        coverURL: "https://image.aladin.co.kr/product/\(titleCursor).jpg")
            var withPages = metadata
            withPages.pageCount = pages
            emit(.addBook(withPages, status: .reading), book: book, at: at)
            let days = random.int(10...40)
            emit(.setGoal(startDate: day, targetDate: day.adding(days: days), theme: ["orange", "green", "blue"][random.int(0...2)]), book: book, at: at)
            reading.append(book)
            return book
        }

        mutating func run() {
            let start = options.firstDay
            emit(.updateProfile(nickname: "reader\(reader.description.prefix(4))", imageFileName: "profile.png", theme: "orange"),
                 at: instant(start, hour: 8, minute: 0))
            emit(.setChallenge(year: start.year, books: 24, pages: 12_000), at: instant(start, hour: 8, minute: 1))
            _ = addBook(on: start, at: instant(start, hour: 8, minute: 5))
            for offset in 0..<options.days {
                let day = start.adding(days: offset)
                if reading.isEmpty || (reading.count < 3 && random.chance(0.03)) {
                    _ = addBook(on: day, at: instant(day, hour: 7, minute: random.int(0...59)))
                }
                guard random.chance(0.82) else { continue }       // some days without reading
                let readings = random.int(1...3)
                // Readings of a day happen one after another: each starts after the previous ended.
                var earliest = instant(day, hour: 6, minute: 0)
                for r in 0..<readings {
                    guard !reading.isEmpty else { break }
                    let book = reading[random.int(0...(reading.count - 1))]
                    let hour = [7, 12, 19, 22, 23][min(4, r * 2 + random.int(0...1))]
                    let at = max(earliest, instant(day, hour: hour, minute: random.int(0...59)))
                    earliest = read(book, on: day, at: at).adding(seconds: 60)
                }
                extras(on: day)
            }
        }

        /// One reading; returns when it ended.
        @discardableResult
        mutating func read(_ book: BookID, on day: LocalDate, at: Timestamp) -> Timestamp {
            guard let state = books[book], let pageCount = state.metadata?.pageCount else { return at }
            var ended = at
            let step = random.int(5...45)
            let target = min(pageCount, state.position + step)
            if random.chance(0.35) {
                // A timed session, sometimes paused, sometimes across midnight.
                let session = SessionID(random.uuid())
                let minutes = random.int(10...80)
                emit(.startSession(session), book: book, at: at)
                var end = at.adding(seconds: Int64(minutes * 60))
                if random.chance(0.3) {
                    let pause = at.adding(seconds: Int64(minutes * 30))
                    emit(.pauseSession(session), book: book, at: pause)
                    emit(.resumeSession(session), book: book, at: pause.adding(seconds: 600))
                    end = end.adding(seconds: 600)
                }
                if random.chance(0.01), openSession == nil {
                    openSession = (book, session)     // never stopped: a crashed app's timer
                    return end
                }
                emit(.finishSession(session, endPosition: target, durationSeconds: minutes * 60), book: book, at: end)
                ended = end
            } else if random.chance(0.08) {
                // Back-dated: recorded the next morning for last night.
                emit(.recordPages(position: target), book: book, at: at, recordedAt: at.adding(seconds: 36_000))
            } else {
                emit(.recordPages(position: target), book: book, at: at)
            }
            if random.chance(0.02), let current = books[book]?.position, current > 10 {
                emit(.correctProgress(position: current - random.int(1...10)), book: book, at: ended.adding(seconds: 120))
            }
            if books[book]?.position == pageCount { finish(book, on: day, at: ended.adding(seconds: 300)) }
            else if !didNotFinishDone, random.chance(0.004) {
                didNotFinishDone = true
                emit(.setStatus(.didNotFinish), book: book, at: ended.adding(seconds: 300))
                reading.removeAll { $0 == book }
            }
            return ended.adding(seconds: 600)
        }

        mutating func finish(_ book: BookID, on day: LocalDate, at: Timestamp) {
            emit(.finishBook(on: day), book: book, at: at)
            emit(.setRating(stars: Double(random.int(8...20)) / 4), book: book, at: at.adding(seconds: 60))
            if random.chance(0.4) { emit(.like, book: book, at: at.adding(seconds: 90)) }
            reading.removeAll { $0 == book }
            finished.append(book)
            if !reReadDone, finished.count >= 2, random.chance(0.5) {
                reReadDone = true
                let again = finished[0]
                emit(.startReadThrough, book: again, at: at.adding(seconds: 3600))
                reading.append(again)
            }
        }

        mutating func extras(on day: LocalDate) {
            guard let book = reading.first, let state = books[book] else { return }
            if random.chance(0.15) {
                let text = DemoHistory.sentences[random.int(0...(DemoHistory.sentences.count - 1))]
                emit(.collectSentence(SentenceID(random.uuid()), text: text, page: max(1, state.position)), book: book,
                     at: instant(day, hour: 21, minute: random.int(0...59)))
            }
            if random.chance(0.05) {
                emit(.writeMemo(MemoID(random.uuid()), text: "오늘 읽은 부분이 인상 깊었다. 다음 장이 기대된다.", page: nil), book: book,
                     at: instant(day, hour: 21, minute: random.int(0...59)))
            }
            if random.chance(0.02) {
                emit(.setHomeOrder(reading.reversed()), at: instant(day, hour: 9, minute: 0))
            }
        }
    }
}
