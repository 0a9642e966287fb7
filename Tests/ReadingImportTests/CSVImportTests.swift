import Foundation
import Projections
import ReadingEvents
import ReadingImport
import Testing

/// Goodreads and StoryGraph: every quirk of the committed fixtures (Tests/ImportFixtures).
@Suite struct CSVImportTests {
    func goodreads(_ options: ImportOptions = Fixtures.options()) throws -> ImportResult {
        try HistoryImport.read(.goodreads, from: Fixtures.url("goodreads-24.csv"), options: options)
    }

    /// `listsBooks` false (what `replay import-from` asks without `--json`): the same events and
    /// text, the books counted, not listed; a report encoded before `bookCount` existed decodes
    /// with its listed books counted.
    @Test func aReportThatDoesNotListBooksCountsThem() throws {
        let listed = try goodreads()
        var options = Fixtures.options()
        options.listsBooks = false
        let counted = try goodreads(options)
        #expect(counted.report.books.isEmpty)
        #expect(counted.report.bookCount == 5 && listed.report.bookCount == 5 && listed.report.books.count == 5)
        #expect(counted.report.text == listed.report.text)
        #expect(try counted.envelopes == listed.envelopes)
        var old = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(listed.report)) as? [String: Any])
        old["bookCount"] = nil
        let decoded = try JSONDecoder().decode(ImportReport.self, from: JSONSerialization.data(withJSONObject: old))
        #expect(decoded == listed.report)
    }

    @Test func goodreads24MapsMetadataShelvesDatesRatingsAndReviews() throws {
        let result = try goodreads()
        let report = result.report
        #expect(report.books.map(\.title) == ["The Left Hand of Darkness", "Piranesi", "Middlemarch", "Dune", "채식주의자"])

        let lhd = try Fixtures.book(result, "The Left Hand of Darkness")
        let events = try Fixtures.events(result, of: lhd.book)
        guard case .bookAdded(let added) = events.first else { Issue.record("first event \(events)"); return }
        #expect(added.metadata.isbn13?.digits == "9780441478125")   // ="…" wrapper stripped
        #expect(added.metadata.publisher == "Ace Books")
        #expect(added.metadata.pageCount == 304)
        #expect(added.metadata.authors == "Ursula K. Le Guin")
        #expect(events.contains(.bookFinished(BookFinished(book: lhd.book, finishedOn: Fixtures.day("2024-12-31")))))
        #expect(events.contains(.ratingSet(RatingSet(book: lhd.book, rating: try Rating(stars: 5)))))
        let memo = events.compactMap { if case .memoWritten(let m) = $0 { m.text } else { nil } }
        #expect(memo.count == 1)
        #expect(memo.first?.contains("The \"Shifgrethor\" chapter, again") == true)   // multi-line, "" unescaped
        #expect(memo.first?.split(whereSeparator: \.isNewline).count == 3)
        #expect(lhd.status == .finished)
        // Date Added is a local day: the add happened on 2024-11-02 in Seoul.
        let addedEnvelope = try #require(result.envelopes.first { $0.event.book == lhd.book })
        #expect(LocalClock().localDay(of: addedEnvelope.occurredAt, in: Fixtures.seoul) == Fixtures.day("2024-11-02"))
        #expect(addedEnvelope.recordedAt == Fixtures.importedAt)
        // Read Count 2 with one date: reported (line 2), not invented.
        #expect(report.warnings.contains { $0.line == 2 && $0.message.contains("read 2 times") })

        // A read row without Date Read: left unfinished and reported, never stamped with today.
        let piranesi = try Fixtures.book(result, "Piranesi")
        #expect(piranesi.status == .reading)
        #expect(try !Fixtures.events(result, of: piranesi.book).contains { if case .bookFinished = $0 { true } else { false } })
        #expect(report.warnings.contains { $0.line == 5 && $0.message.contains("without a Date Read") })
        #expect(try !Fixtures.events(result, of: piranesi.book).contains { if case .ratingSet = $0 { true } else { false } }) // My Rating 0

        // The did-not-finish shelf, a bad ISBN check digit (reported, line 6), private notes as a memo.
        let middlemarch = try Fixtures.book(result, "Middlemarch")
        #expect(middlemarch.status == .didNotFinish)
        #expect(report.warnings.contains { $0.line == 6 && $0.message.contains("9780000000000") })
        #expect(try Fixtures.events(result, of: middlemarch.book).contains { if case .memoWritten(let m) = $0 { m.text == "Too slow for me, for now." } else { false } })

        #expect(try Fixtures.book(result, "Dune").status == .wantToRead)
        let han = try Fixtures.book(result, "채식주의자")
        #expect(han.status == .reading)
        guard case .bookAdded(let hanAdded) = try Fixtures.events(result, of: han.book).first else { Issue.record("no add"); return }
        #expect(hanAdded.metadata.authors == "한강, Deborah Smith")
        #expect(report.eventsByType["BookAdded"] == 5)
        #expect(report.skipped.isEmpty)
    }

    @Test func undatedReadFinishesOnTheDateAddedOnlyWhenAskedAndFlagged() throws {
        let result = try goodreads(Fixtures.options(undated: .finishOnDateAdded))
        let piranesi = try Fixtures.book(result, "Piranesi")
        #expect(try Fixtures.events(result, of: piranesi.book).contains(.bookFinished(BookFinished(book: piranesi.book, finishedOn: Fixtures.day("2023-05-14")))))
        #expect(result.report.warnings.contains { $0.line == 5 && $0.message.contains("flagged") })
    }

    @Test func goodreads31ColumnVariantIsReadByHeaderName() throws {
        let result = try HistoryImport.read(.goodreads, from: Fixtures.url("goodreads-31.csv"), options: Fixtures.options())
        let klara = try Fixtures.book(result, "Klara and the Sun")
        #expect(try Fixtures.events(result, of: klara.book).contains(.bookFinished(BookFinished(book: klara.book, finishedOn: Fixtures.day("2021-04-20")))))
        #expect(try Fixtures.events(result, of: klara.book).contains(.ratingSet(RatingSet(book: klara.book, rating: try Rating(stars: 4)))))
        #expect(try Fixtures.book(result, "Atomic Habits").status == .wantToRead)
        #expect(result.report.warnings.contains { $0.line == 3 && $0.message.contains("favorites-to-lend") })
    }

    @Test(arguments: ["Pacific/Kiritimati", "America/Adak", "Asia/Seoul", "UTC", "Pacific/Pago_Pago"])
    func aFinishOn20241231IsOnThatDayInTheReadersZone(zone: String) throws {
        let z = try ZoneID(zone)
        let result = try goodreads(Fixtures.options(zone: z))
        let finish = try #require(result.envelopes.first { if case .bookFinished = $0.event { true } else { false } })
        #expect(finish.event == .bookFinished(BookFinished(book: finish.event.book!, finishedOn: Fixtures.day("2024-12-31"))))
        #expect(LocalClock().localDay(of: finish.occurredAt, in: z) == Fixtures.day("2024-12-31"))
        #expect(finish.timeZone == z)
    }

    @Test func theSameFileGivesTheSameEventIDsAndAnotherReaderOthers() throws {
        let a = try goodreads(), b = try goodreads()
        #expect(try a.envelopes == b.envelopes)
        var other = Fixtures.options(); other.reader = ReaderID(uuidString: "00000000-0000-4000-8000-000000000001")!
        let c = try goodreads(other)
        #expect(try Set(a.envelopes.map(\.eventID)).isDisjoint(with: Set(c.envelopes.map(\.eventID))))
        #expect(try Set(a.envelopes.map(\.eventID)).count == a.envelopes.count)
    }

    @Test func storyGraphRangesStatusesQuarterStarsAndIdentifiers() throws {
        let result = try HistoryImport.read(.storygraph, from: Fixtures.url("storygraph.csv"), options: Fixtures.options())
        let report = result.report
        let phm = try Fixtures.book(result, "Project Hail Mary")
        let b = phm.book
        let events = try Fixtures.events(result, of: b)
        #expect(Array(events.dropFirst()) == [
            .statusChanged(ReadingStatusChanged(book: b, status: .reading)),
            .bookFinished(BookFinished(book: b, finishedOn: Fixtures.day("2021-05-20"))),
            .readThroughStarted(ReadThroughStarted(book: b, readThrough: 2)),
            .bookFinished(BookFinished(book: b, finishedOn: Fixtures.day("2024-03-15"))),
            .ratingSet(RatingSet(book: b, rating: try Rating(quarters: 19))),
            events.last!,
        ])
        if case .memoWritten(let memo) = events.last { #expect(memo.text == "Rocky!\nAmaze, amaze, amaze.") } else { Issue.record("no review memo") }
        let readThroughStart = try #require(result.envelopes.first { if case .readThroughStarted = $0.event { true } else { false } })
        #expect(LocalClock().localDay(of: readThroughStart.occurredAt, in: Fixtures.seoul) == Fixtures.day("2024-03-01"))

        // did-not-finish with a range; an ISBN/UID that is not an ISBN-13 is the identity only.
        let wind = try Fixtures.book(result, "The Name of the Wind")
        #expect(wind.status == .didNotFinish)
        #expect(wind.identity.hasSuffix("sg-9f3a2c71"))
        #expect(report.warnings.contains { $0.line == 4 && $0.message.contains("not an ISBN-13") })

        // A reversed range and a Read Count that disagrees: reported, the good range imported.
        let reversed = try Fixtures.book(result, "Reversed Dates")
        #expect(report.warnings.contains { $0.line == 5 && $0.message.contains("starts after it ends") })
        #expect(report.warnings.contains { $0.line == 5 && $0.message.contains("Read Count 3") })
        let reversedEvents = try Fixtures.events(result, of: reversed.book)
        #expect(reversedEvents.filter { if case .bookFinished = $0 { true } else { false } }
                == [.bookFinished(BookFinished(book: reversed.book, finishedOn: Fixtures.day("2023-10-05")))])
        #expect(reversedEvents.contains(.ratingSet(RatingSet(book: reversed.book, rating: try Rating(stars: 3.25)))))

        #expect(try Fixtures.book(result, "The Remains of the Day").status == .wantToRead)
        #expect(try Fixtures.book(result, "Babel").status == .reading)
        #expect(try Fixtures.book(result, "Undated Read").status == .reading)
        #expect(report.warnings.contains { $0.line == 8 && $0.message.contains("without any date") })
    }

    @Test func aFileOfTheWrongFormatIsRefusedWithWhatWasExpected() throws {
        #expect {
            try HistoryImport.read(.goodreads, from: Fixtures.url("storygraph.csv"), options: Fixtures.options())
        } throws: { error in
            guard case ImportError.wrongFormat(.goodreads, let expected) = error else { return false }
            return expected.contains("Book Id")
        }
        #expect(throws: ImportError.self) {
            try HistoryImport.read(.storygraph, from: Fixtures.url("goodreads-24.csv"), options: Fixtures.options())
        }
    }

    @Test func structurallyBrokenFilesFailWithTheirLineNumber() throws {
        for (file, line) in [("goodreads-bad-quote.csv", 3), ("goodreads-wrong-columns.csv", 3)] {
            #expect {
                try HistoryImport.read(.goodreads, from: Fixtures.url(file), options: Fixtures.options())
            } throws: { error in
                guard case ImportError.malformed(let at, _) = error else { return false }
                return at == line
            }
        }
        let header = try String(contentsOf: Fixtures.url("goodreads-bad-quote.csv"), encoding: .utf8).split(separator: "\n")[0]
        let unterminated = header + "\n1,\"Open quote,A,,,,,0,0,,,,,,,2024/01/01,,,to-read,,,,0,0\n2,B,A,,,,,0,0,,,,,,,2024/01/01,,,to-read,,,,0,0\n"
        #expect {
            try HistoryImport.read(.goodreads, csv: String(unterminated), options: Fixtures.options())
        } throws: { error in
            guard case ImportError.malformed(let at, let detail) = error else { return false }
            return at == 2 && detail.contains("not closed")
        }
        #expect(throws: ImportError.self) { try HistoryImport.read(.goodreads, csv: "", options: Fixtures.options()) }
    }

    /// Issue 26: a repeated `Book Id` with other data is skipped into the report naming the
    /// column and both lines, never merged into the first row's book; an exact repeat is imported once.
    @Test func aRepeatedBookIdWithOtherDataIsReportedNotMerged() throws {
        let text = """
            Book Id,Title,Author,Exclusive Shelf,My Rating,My Review,Date Read,Date Added
            41,First Title,A. Writer,read,2,,2024/02/01,2024/01/01
            41,Other Title,B. Writer,read,5,Another book's review,2024/03/01,2024/01/05
            42,Twice,C. Writer,to-read,0,,,2024/01/02
            42,Twice,C. Writer,to-read,0,,,2024/01/02

            """
        let result = try HistoryImport.read(.goodreads, csv: text, options: Fixtures.options())
        #expect(result.report.books.map(\.title) == ["First Title", "Twice"])
        let skipped = try #require(result.report.skipped.first)
        #expect(result.report.skipped.count == 1)
        #expect(skipped.line == 3)
        #expect(skipped.reason.hasPrefix("Book Id: 41 is on line 2 already, with other data"))
        #expect(result.report.warnings.contains { $0.line == 5 && $0.message.contains("repeats line 4 exactly") })
        let first = try Fixtures.book(result, "First Title")
        let events = try Fixtures.events(result, of: first.book)
        #expect(events.contains(.ratingSet(RatingSet(book: first.book, rating: try Rating(stars: 2)))))
        #expect(!events.contains { if case .memoWritten = $0 { true } else { false } })
        #expect(!events.contains(.ratingSet(RatingSet(book: first.book, rating: try Rating(stars: 5)))))
    }

    /// Issue 26: report lines escape control characters, quote at most 80 characters of a bad
    /// value or header, count rows as rows, and a quoted U+2028 does not move later line numbers.
    @Test func reportsEscapeQuoteShortlyCountRowsAndKeepLineNumbers() throws {
        let header = "Book Id,Title,Author,Exclusive Shelf,My Rating,My Review,Date Read,Date Added"
        let escape = "Evil\u{1B}]0;owned\u{07}\u{1B}[2J Title"
        let long = String(repeating: "x", count: 10_001)
        let text = """
            \(header)
            1,\(escape),A,strange-shelf,0,,,2024/01/01
            2,Two Refusals,B,read,7,\(long),2024/02/01,2024/01/02

            """
        let result = try HistoryImport.read(.goodreads, csv: text, options: Fixtures.options())
        let report = result.report.text
        #expect(!report.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(report.contains("Evil\\u{1B}]0;owned\\u{7}"))
        // Line 3's rating and review are both refused: two reasons, one row.
        #expect(result.report.skipped.map(\.line) == [3, 3])
        #expect(result.report.skippedRows == 1)
        #expect(report.hasPrefix("goodreads: 2 books, "))
        #expect(report.contains(", 1 rows skipped, "))
        // A wrong-format file with a 200,000-character first line: the error quotes 80 of them.
        let wide = String(repeating: "\u{1B}y", count: 100_000) + "\n1\n"
        #expect {
            try HistoryImport.read(.goodreads, csv: wide, options: Fixtures.options())
        } throws: { error in
            let message = "\(error)"
            return message.count < 1_000 && message.contains("(199920 more characters)") && !message.contains("\u{1B}")
        }
        // A quoted U+2028 (and U+2029, NEL) inside a field is not a line break.
        let separated = "\(header)\n5,\"Line\u{2028}Para\u{2029}Next\u{85}End\",A,to-read,0,,,2024/01/01\n6,too,few\n"
        #expect {
            try HistoryImport.read(.goodreads, csv: separated, options: Fixtures.options())
        } throws: { error in
            guard case ImportError.malformed(let line, _) = error else { return false }
            return line == 3
        }
    }

    @Test func arbitraryBytesNeverCrashTheCSVReaders() throws {
        var rng = SplitMix64(seed: 11)
        let base = Array(try Data(contentsOf: Fixtures.url("goodreads-24.csv")))
        for _ in 0..<300 {
            var bytes = base
            for _ in 0..<Int(rng.next() % 8 + 1) {
                let i = Int(rng.next() % UInt64(bytes.count))
                bytes[i] = [UInt8(ascii: "\""), UInt8(ascii: ","), 0x0A, 0x0D, UInt8(truncatingIfNeeded: rng.next())][Int(rng.next() % 5)]
            }
            for source in [ImportSource.goodreads, .storygraph] {
                _ = try? HistoryImport.read(source, csv: String(decoding: bytes, as: UTF8.self), options: Fixtures.options())
            }
        }
    }
}
