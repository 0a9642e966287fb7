import Testing
@testable import ReadingEvents

/// Issue 36, finding 3: text limits counted characters (extended grapheme clusters) only, so a
/// 10,000-character memo of megabytes, a 1-character title of 2 MB (a letter with a million
/// combining marks) and a 40-character nickname of kilobytes were accepted, and the sync server
/// refused them for their size on every push. Every text now has a UTF-8 byte limit beside its
/// character limit (4 bytes per character of the limit), in the value rules that commands, both
/// decoders, imports and the server share.
@Suite struct TextByteLimitTests {
    /// `characters` characters, each a letter with `marks` combining acute accents (2 bytes each).
    static func heavy(_ characters: Int, marks: Int) -> String {
        String(repeating: "e" + String(repeating: "\u{0301}", count: marks), count: characters)
    }

    static let at = Timestamp(iso8601: "2026-03-01T09:00:00+09:00")!

    /// A command per text field, each with a text within its character limit and over its byte
    /// limit; the field the refusal must name.
    static var oversizedCommands: [(field: String, command: Either)] {
        let meta = BookWorld.metadata
        func with(_ edit: (inout BookMetadata) -> Void) -> BookMetadata { var m = meta; edit(&m); return m }
        return [
            // A 1-character title of 2 MB.
            ("metadata.title", .book(.addBook(with { $0.title = heavy(1, marks: 1_000_000) }, status: .reading), added: false)),
            ("metadata.subtitle", .book(.correctMetadata(with { $0.subtitle = heavy(2, marks: 1_000) }), added: true)),
            ("metadata.authors", .book(.correctMetadata(with { $0.authors = heavy(2, marks: 2_000) }), added: true)),
            ("metadata.publisher", .book(.correctMetadata(with { $0.publisher = heavy(2, marks: 1_000) }), added: true)),
            ("metadata.categoryPath", .book(.correctMetadata(with { $0.categoryPath = heavy(2, marks: 1_000) }), added: true)),
            ("metadata.coverURL", .book(.correctMetadata(with { $0.coverURL = heavy(2, marks: 5_000) }), added: true)),
            ("metadata.productLink", .book(.correctMetadata(with { $0.productLink = heavy(2, marks: 5_000) }), added: true)),
            // A 10-character memo of 60 KB (the limit: 10,000 characters, 40,000 bytes).
            ("text", .book(.writeMemo(MemoID(), text: heavy(10, marks: 3_000), page: nil), added: true)),
            ("text", .book(.collectSentence(SentenceID(), text: heavy(1, marks: 5_000), page: nil), added: true)),
            ("theme", .book(.setGoal(startDate: try! LocalDate(iso: "2026-03-01"), targetDate: try! LocalDate(iso: "2026-03-31"),
                                     theme: Theme(rawValue: heavy(1, marks: 200))), added: true)),
            // A 40-character nickname of 8 KB (the limit: 40 characters, 160 bytes).
            ("nickname", .reader(.updateProfile(nickname: heavy(40, marks: 100), imageFileName: nil, theme: nil))),
            ("imageFileName", .reader(.updateProfile(nickname: "독자", imageFileName: heavy(1, marks: 1_000), theme: nil))),
            ("theme", .reader(.updateProfile(nickname: "독자", imageFileName: nil, theme: Theme(rawValue: heavy(1, marks: 200))))),
        ]
    }

    enum Either {
        case book(BookCommand, added: Bool)
        case reader(ReaderCommand)

        func decide() throws(ValidationError) -> [ReadingEvent] {
            switch self {
            case .book(let command, let added):
                let world = added ? BookWorld.added() : BookWorld()
                return try command.decide(for: world.book, in: world.state, at: TextByteLimitTests.at)
            case .reader(let command):
                return try command.decide(in: ReaderState())
            }
        }
    }

    @Test func commandsRefuseATextOverItsByteLimitNamingTheFieldAndTheByteRule() {
        for (field, command) in Self.oversizedCommands {
            let error = #expect(throws: ValidationError.self, "\(field)") { try command.decide() }
            #expect(error?.field == field && error?.rule == .tooLong, "\(String(describing: error))")
            #expect(error?.detail.contains("UTF-8 bytes") == true, "\(String(describing: error))")
        }
    }

    /// Texts at their full character limit in Hangul (3 bytes a character) and in 4-byte emoji
    /// (exactly the byte limit) are accepted.
    @Test func fullLengthTextsOfFourByteCharactersAreAccepted() throws {
        let world = BookWorld.added()
        let memo = String(repeating: "😀", count: Limits.memoLength)
        #expect(memo.utf8.count == Limits.utf8Bytes(forCharacters: Limits.memoLength))
        #expect(try BookCommand.writeMemo(MemoID(), text: memo, page: nil).decide(for: world.book, in: world.state, at: Self.at).count == 1)
        let hangul = String(repeating: "한", count: Limits.memoLength)
        #expect(try BookCommand.writeMemo(MemoID(), text: hangul, page: nil).decide(for: world.book, in: world.state, at: Self.at).count == 1)
        var metadata = BookWorld.metadata
        metadata.title = String(repeating: "😀", count: BookMetadata.maxTitleLength)
        #expect(try metadata.validated().title == metadata.title)
        let nickname = String(repeating: "😀", count: Limits.nicknameLength)
        #expect(try ReaderCommand.updateProfile(nickname: nickname, imageFileName: nil, theme: nil).decide(in: ReaderState()).count == 1)
        let over = nickname + "e"
        #expect(throws: ValidationError.self) {
            try ReaderCommand.updateProfile(nickname: over, imageFileName: nil, theme: nil).decide(in: ReaderState())
        }
    }

    /// The events the oversized commands would make, as an import line or another replica's
    /// record carries them: `validate` (imports) refuses each naming its field, and both
    /// decoders (the store's protobuf records, JSON Lines) refuse them with the byte rule.
    @Test func importsAndBothDecodersRefuseATextOverItsByteLimit() throws {
        let reader = ReaderID(), book = BookID()
        var metadata = BookWorld.metadata
        metadata.title = Self.heavy(1, marks: 1_000_000)
        let events: [(String, ReadingEvent)] = [
            ("metadata.title", .bookAdded(BookAdded(book: book, metadata: metadata, status: .reading))),
            ("text", .memoWritten(MemoWritten(memo: MemoID(), book: book, text: Self.heavy(10, marks: 3_000), page: nil))),
            ("text", .sentenceCollected(SentenceCollected(sentence: SentenceID(), book: book, text: Self.heavy(1, marks: 5_000), page: nil))),
            ("nickname", .profileUpdated(ProfileUpdated(nickname: Self.heavy(40, marks: 100), imageFileName: nil, theme: nil))),
            ("imageFileName", .profileUpdated(ProfileUpdated(nickname: "독자", imageFileName: Self.heavy(1, marks: 1_000), theme: nil))),
        ]
        for (field, event) in events {
            let envelope = EventEnvelope(reader: reader, occurredAt: Self.at, timeZone: try ZoneID("Asia/Seoul", field: "timeZone"),
                                         recordedAt: Self.at, event: event)
            let refused = #expect(throws: ValidationError.self, "\(field)") { try envelope.validate() }
            #expect(refused?.field == field && refused?.rule == .tooLong && refused?.detail.contains("UTF-8 bytes") == true,
                    "\(String(describing: refused))")

            let binary = BinaryEventCodec.encode(envelope)
            let fromBinary = #expect(throws: EventDecodingError.self, "\(field)") {
                try BinaryEventCodec.decode(binary, position: 1, eventID: envelope.eventID, stream: envelope.stream, streamVersion: 1)
            }
            #expect(fromBinary?.field == "data." + field && fromBinary?.rule == .tooLong && fromBinary?.detail.contains("UTF-8 bytes") == true,
                    "\(String(describing: fromBinary))")

            let line = JSONEventCodec.encodeLine(envelope)
            let fromJSON = #expect(throws: EventDecodingError.self, "\(field)") { try JSONEventCodec.decode(line) }
            #expect(fromJSON?.field == "data." + field && fromJSON?.rule == .tooLong && fromJSON?.detail.contains("UTF-8 bytes") == true,
                    "\(String(describing: fromJSON))")
        }
    }
}
