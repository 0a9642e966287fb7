import Foundation
import ReadingEvents

/// The StoryGraph's export CSV.
///
/// Per row: the book (`Title`, `Authors`; `ISBN/UID` as its ISBN-13 when it is one, else kept as
/// the row's identity and reported), added on `Date Added`; every range of `Dates Read`
/// (`2024/01/02-2024/01/20, 2024/06/01-2024/06/03`) as its own read-through, started on its first
/// day and finished on its last; `Read Status` (`to-read`, `currently-reading`, `read`,
/// `did-not-finish`); `Last Date Read` as the finish when there are no ranges; `Star Rating` in
/// quarter stars; `Review` as a memo. A range that ends before it starts, and a `Read Count`
/// that disagrees with the ranges, are reported, not guessed.
enum StoryGraphImporter {
    static let required = ["Title", "Authors", "Read Status", "Dates Read"]

    static func read(_ csv: CSVTable.Source, options: ImportOptions, progress: ImportProgress?) throws(ImportError) -> ImportResult {
        try ImportPlan.readCSV(csv, source: .storygraph, describedAs: "a StoryGraph export", required: required, options: options,
                               progress: progress, row: importRow)
    }

    /// One `Dates Read` range; either end may be missing.
    struct Range { var start: LocalDate?; var end: LocalDate? }

    private static func importRow(_ row: CSVTable.Row, _ table: CSVTable, _ plan: inout ImportPlan) {
        let line = row.line
        let title = table.value("Title", in: row), authors = table.value("Authors", in: row)
        let uid = table.value("ISBN/UID", in: row)
        var isbn: ISBN13?
        if !uid.isEmpty {
            if let valid = try? ISBN13(uid) { isbn = valid } else {
                plan.warn("\(title): ISBN/UID \(ReportText.quoted(uid)) is not an ISBN-13; kept as the book's identity only", line: line)
            }
        }
        let identity = uid.isEmpty ? "title:\(title.lowercased())|authors:\(authors.lowercased())" : "uid:\(uid)"
        var book = plan.book(identity: identity, line: line)
        book.title = title

        // Ranges.
        var ranges: [Range] = []
        let datesText = table.value("Dates Read", in: row)
        for piece in datesText.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !piece.isEmpty {
            let ends = piece.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            // A plain date `2024/01/20` (a one-day read) or a range `start-end` with either side empty.
            let range: Range
            if ends.count == 2, ends[0].contains("/") || ends[0].isEmpty, ends[1].contains("/") || ends[1].isEmpty {
                range = Range(start: LocalDays.parse(ends[0]), end: LocalDays.parse(ends[1]))
                if (!ends[0].isEmpty && range.start == nil) || (!ends[1].isEmpty && range.end == nil) {
                    plan.warn("\(title): Dates Read range \(ReportText.quoted(piece)) has a date that is not YYYY/MM/DD; range skipped", line: line)
                    continue
                }
            } else if let day = LocalDays.parse(piece) {
                range = Range(start: nil, end: day)
            } else {
                plan.warn("\(title): Dates Read \(ReportText.quoted(piece)) is not a date or a range of dates; skipped", line: line)
                continue
            }
            if let s = range.start, let e = range.end, s > e {
                plan.warn("\(title): Dates Read range \(piece) starts after it ends; range skipped", line: line)
                continue
            }
            ranges.append(range)
        }
        ranges.sort { ($0.start ?? $0.end!) < ($1.start ?? $1.end!) }
        let lastRead = LocalDays.parse(table.value("Last Date Read", in: row))
        let added = LocalDays.parse(table.value("Date Added", in: row))
        let status = table.value("Read Status", in: row).lowercased()
        let known = ["to-read", "currently-reading", "read", "did-not-finish"]
        guard known.contains(status) else {
            plan.skip("Read Status: \(ReportText.quoted(status)) is not one of \(known.joined(separator: ", "))", line: line)
            return
        }
        if ranges.isEmpty, status == "read", let lastRead { ranges = [Range(start: nil, end: lastRead)] }
        if let countText = Optional(table.value("Read Count", in: row)), !countText.isEmpty, let count = Int(countText),
           status == "read" || !ranges.isEmpty, count != ranges.count {
            plan.warn("\(title): Read Count \(count) but \(ranges.count) dated read\(ranges.count == 1 ? "" : "s"); imported the dated ones", line: line)
        }
        let earliest = ranges.compactMap { $0.start ?? $0.end }.min()
        guard let addedOn = added ?? earliest ?? lastRead else {
            plan.skip("\(title): no Date Added and no read dates; the book cannot be placed in time", line: line)
            return
        }
        let metadata = BookMetadata(title: title, authors: authors, isbn13: isbn)
        let initial: ReadingStatus = status == "to-read" ? .wantToRead : (ranges.isEmpty ? (status == "did-not-finish" ? .didNotFinish : .reading) : .wantToRead)
        guard plan.run(.addBook(metadata, status: initial), &book, role: "added", at: plan.noon(of: addedOn), line: line) else { return }

        if status != "to-read" {
            for (index, range) in ranges.enumerated() {
                let isLast = index == ranges.count - 1
                let startDay = range.start ?? range.end!
                if index > 0 {
                    plan.run(.startReadThrough, &book, role: "readThrough:\(index + 1):\(startDay)", at: plan.noon(of: startDay), line: line)
                } else if range.start != nil {
                    plan.run(.setStatus(.reading), &book, role: "started:1:\(startDay)", at: plan.noon(of: startDay), line: line)
                }
                guard let end = range.end else { continue }
                if isLast, status == "did-not-finish" {
                    // The last range of a did-not-finish book ends the day the reader gave up.
                    plan.run(.setStatus(.didNotFinish), &book, role: "dnf:\(end)", at: plan.noon(of: end), line: line)
                } else if isLast, status == "currently-reading" {
                    plan.warn("\(title): currently reading, but its last range ends \(end); not finished", line: line)
                } else {
                    plan.run(.finishBook(on: end), &book, role: "finished:\(index + 1):\(end)", at: plan.noon(of: end), line: line)
                }
            }
            if status == "did-not-finish", book.state.status != .didNotFinish, !book.state.isFinished {
                plan.run(.setStatus(.didNotFinish), &book, role: "dnf", at: plan.noon(of: lastRead ?? addedOn), line: line)
            } else if status == "did-not-finish", book.state.isFinished {
                plan.warn("\(title): did not finish, but every range has a finish; the last range is imported as finished", line: line)
            }
            if status == "read", ranges.isEmpty {
                switch plan.options.undatedFinish {
                case .leaveUnfinished:
                    plan.warn("\(title): read without any date; left unfinished (option: finish on the date added)", line: line)
                case .finishOnDateAdded:
                    plan.run(.finishBook(on: addedOn), &book, role: "finished:1:\(addedOn)", at: plan.noon(of: addedOn), line: line)
                    plan.warn("\(title): read without any date; finished on the date added \(addedOn) (flagged)", line: line)
                }
            }
        }

        let ratingText = table.value("Star Rating", in: row)
        let lastDay = ranges.last.flatMap { $0.end ?? $0.start } ?? addedOn
        if !ratingText.isEmpty {
            if let stars = Double(ratingText), stars > 0 {
                plan.run(.setRating(stars: stars), &book, role: "rating:\(ratingText)", at: plan.noon(of: lastDay), line: line)
            } else if Double(ratingText) == nil {
                plan.warn("\(title): Star Rating \(ReportText.quoted(ratingText)) is not a number; not kept", line: line)
            }
        }
        let review = table.rawValue("Review", in: row)
        if !review.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            let memo = MemoID(plan.derivedUUID(["memo", book.identity, "review"]))
            plan.run(.writeMemo(memo, text: review, page: nil), &book, role: "review", at: plan.noon(of: lastDay), line: line)
        }
        plan.finish(book)
    }
}
