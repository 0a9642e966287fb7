import Foundation
import Testing
@testable import ReadingEvents

/// Issue 24, item 7: value rules the commands kept but events made elsewhere (an import line, a
/// replica's batch) escaped. Each rule lives once in `ValueRules` and is checked by the command
/// path (`decide`) and by `EventEnvelope.validate` (import, `appendRecorded`, merges) alike.
@Suite struct EntryRuleTests {
    typealias E = EnvelopeValidationTests

    /// Texts made only of invisible characters: controls (U+0000, U+007F), zero-width space and
    /// joiners, bidi marks and isolates, the BOM, mixed with whitespace.
    static let invisibleTexts = ["\u{0}", "\u{1}\u{7F}", "\u{200B}", "\u{200C}\u{200D}", "\u{200E}\u{200F}",
                                 " \u{202E} \u{2066}\u{2069} ", "\u{FEFF}", "\u{2060}\u{00AD}", "\t\u{0}\n"]

    @Test(arguments: invisibleTexts)
    func aTextOfInvisibleCharactersIsEmptyInCommandsAndImports(text: String) {
        var world = BookWorld.added()
        try! world.run(.collectSentence(SentenceID(), text: "a sentence", page: 1))
        let book = world.book
        let commands: [(BookCommand, String)] = [
            (.collectSentence(SentenceID(), text: text, page: nil), "text"),
            (.writeMemo(MemoID(), text: text, page: nil), "text"),
            (.correctMetadata(BookMetadata(title: text, pageCount: 300)), "metadata.title"),
        ]
        for (command, field) in commands {
            let error = rejection(world, command)
            #expect(error?.field == field && error?.rule == .empty, "\(command): \(String(describing: error))")
        }
        let profile = E.rule { _ = try ReaderCommand.updateProfile(nickname: text, imageFileName: nil, theme: nil).decide(in: ReaderState()) }
        #expect(profile?.0 == "nickname" && profile?.1 == .empty, "\(String(describing: profile))")

        let events: [(ReadingEvent, String)] = [
            (.sentenceCollected(SentenceCollected(sentence: SentenceID(), book: E.book, text: text, page: nil)), "text"),
            (.memoWritten(MemoWritten(memo: MemoID(), book: E.book, text: text, page: nil)), "text"),
            (.bookAdded(BookAdded(book: E.book, metadata: BookMetadata(title: text), status: .reading)), "metadata.title"),
            (.profileUpdated(ProfileUpdated(nickname: text, imageFileName: nil, theme: nil)), "nickname"),
        ]
        for (event, field) in events {
            let got = E.rule { try E.envelope(event).validate() }
            #expect(got?.0 == field && got?.1 == .empty, "\(event): \(String(describing: got))")
        }
        _ = book
    }

    /// Visible text around invisible characters stays accepted (a ZWJ emoji, a bidi mark in a
    /// mixed-script title).
    @Test func visibleTextWithInvisibleCharactersIsAccepted() {
        for text in ["👩‍💻", "\u{200F}שלום", "a\u{200B}b", "채식주의자\u{FEFF}"] {
            #expect(E.rule { try E.envelope(.sentenceCollected(SentenceCollected(sentence: SentenceID(), book: E.book, text: text, page: nil))).validate() } == nil)
            #expect(E.rule { try E.envelope(.profileUpdated(ProfileUpdated(nickname: text, imageFileName: nil, theme: nil))).validate() } == nil)
        }
    }

    /// A finish dated 0001-01-01 and a goal from 0001 to 9999 were accepted on import; dates keep
    /// to `Limits.years` (1900 ... 2199), in commands and imports alike.
    @Test func datesKeepToTheYearsInCommandsAndImports() {
        var world = BookWorld.added()
        try! world.run(.recordPages(position: 300))
        let finish = rejection(world, .finishBook(on: day(1, 1, 1)))
        #expect(finish?.field == "finishedOn" && finish?.rule == .outOfRange, "\(String(describing: finish))")
        let goal = rejection(BookWorld.added(), .setGoal(startDate: day(1, 1, 1), targetDate: day(9999, 12, 31), theme: nil))
        #expect(goal?.field == "startDate" && goal?.rule == .outOfRange, "\(String(describing: goal))")
        var withGoal = BookWorld.added()
        try! withGoal.run(.setGoal(startDate: day(2026, 3, 1), targetDate: day(2026, 4, 1), theme: nil))
        let change = rejection(withGoal, .changeGoal(targetDate: day(9999, 12, 31), theme: nil))
        #expect(change?.field == "targetDate" && change?.rule == .outOfRange, "\(String(describing: change))")

        let events: [(ReadingEvent, String)] = [
            (.bookFinished(BookFinished(book: E.book, finishedOn: day(1, 1, 1))), "finishedOn"),
            (.goalSet(GoalSet(book: E.book, startDate: day(1, 1, 1), targetDate: day(9999, 12, 31), theme: nil)), "startDate"),
            (.goalSet(GoalSet(book: E.book, startDate: day(2026, 1, 1), targetDate: day(2200, 1, 1), theme: nil)), "targetDate"),
            (.goalChanged(GoalChanged(book: E.book, targetDate: day(9999, 12, 31), theme: nil)), "targetDate"),
        ]
        for (event, field) in events {
            let got = E.rule { try E.envelope(event).validate() }
            #expect(got?.0 == field && got?.1 == .outOfRange, "\(event): \(String(describing: got))")
        }
        #expect(E.rule { try E.envelope(.bookFinished(BookFinished(book: E.book, finishedOn: day(1900, 1, 1)))).validate() } == nil)
        #expect(E.rule { try E.envelope(.bookFinished(BookFinished(book: E.book, finishedOn: day(2199, 12, 31)))).validate() } == nil)
    }

    /// A `GoalChanged` whose target is before the goal's start (set earlier in the same batch) was
    /// accepted on import; `changeGoal` refuses it. The batch check keeps each goal's start.
    @Test func aGoalChangedBeforeItsStartIsRefusedInABatch() {
        let set = E.envelope(.goalSet(GoalSet(book: E.book, startDate: day(2026, 3, 1), targetDate: day(2026, 4, 1), theme: nil)))
        let early = E.envelope(.goalChanged(GoalChanged(book: E.book, targetDate: day(2026, 2, 1), theme: nil)))
        do {
            try RecordedBatch.check([set, early])
            Issue.record("a GoalChanged before the goal's start was accepted")
        } catch let rejection as RecordedEventRejection {
            #expect(rejection.index == 1)
            guard case .invalid(let error) = rejection.reason else { Issue.record("\(rejection)"); return }
            #expect(error.field == "targetDate" && error.rule == .targetBeforeStart, "\(error)")
        } catch {
            Issue.record("\(error)")
        }
        // The same target after the start, or after a deleted goal was set again later, is fine.
        let fine = E.envelope(.goalChanged(GoalChanged(book: E.book, targetDate: day(2026, 3, 1), theme: nil)))
        #expect(throws: Never.self) { try RecordedBatch.check([set, fine]) }
        let deleted = E.envelope(.goalDeleted(GoalDeleted(book: E.book)))
        let again = E.envelope(.goalSet(GoalSet(book: E.book, startDate: day(2026, 1, 1), targetDate: day(2026, 5, 1), theme: nil)))
        #expect(throws: Never.self) { try RecordedBatch.check([set, deleted, again, early]) }
    }

    /// A 20 MB raw payload on an unknown event type was accepted; an unknown payload is now at
    /// most `Limits.unknownPayloadBytes`.
    @Test func anUnknownPayloadHasALimit() {
        let over = E.envelope(.unknown(UnknownEvent(type: "ShelfRenamed", schemaVersion: 1,
                                                    payload: [UInt8](repeating: 7, count: Limits.unknownPayloadBytes + 1))))
        let got = E.rule { try over.validate() }
        #expect(got?.0 == "rawPayload" && got?.1 == .tooLong, "\(String(describing: got))")
        let at = E.envelope(.unknown(UnknownEvent(type: "ShelfRenamed", schemaVersion: 1,
                                                  payload: [UInt8](repeating: 7, count: Limits.unknownPayloadBytes))))
        #expect(E.rule { try at.validate() } == nil)
    }

    /// A JSON line with a key twice (the decoder kept one silently) is refused, naming the key
    /// path, in the envelope and in the payload, also when the second spelling is escaped.
    @Test(arguments: [("type", #""BookAdded""#), ("reader", "READER"), ("data.status", #""reading""#),
                      ("data.metadata.title", #""t""#)])
    func aJSONLineWithADuplicateKeyIsRefused(field: String, value: String) throws {
        let base = JSONEventCodec.encodeLine(E.envelope(.bookAdded(BookAdded(book: E.book, metadata: BookMetadata(title: "t", pageCount: 300), status: .reading))))
        #expect(throws: Never.self) { _ = try JSONEventCodec.decode(base) }
        let parts = field.split(separator: ".").map(String.init)
        let key = parts.last!
        // The key again, its first letter escaped (\u0074 for "t"), at the start of its object.
        let escaped = "\\u00" + String(key.unicodeScalars.first!.value, radix: 16) + key.dropFirst()
        let pair = "\"\(escaped)\":\(value.replacingOccurrences(of: "READER", with: "\"\(E.reader)\"".lowercased())),"
        let opening = parts.count == 1 ? "{" : "\"\(parts[parts.count - 2])\":{"
        let line = base.replacingCharacters(in: try #require(base.range(of: opening)), with: opening + pair)
        do {
            _ = try JSONEventCodec.decode(line)
            Issue.record("decoded \(line)")
        } catch {
            #expect(error.field == field && error.rule == .duplicateElement, "\(error) in \(line)")
        }
    }
}
