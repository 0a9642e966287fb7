import Foundation
import ReadingEvents

/// Goodreads' library export (both the 24- and the 31-column variants: columns are found by
/// header name).
///
/// Per row: the book with its metadata (`Title`; `Author` and `Additional Authors`; `ISBN13` with
/// its `="…"` wrapper stripped; `Publisher`; `Number of Pages`), added on `Date Added`; the
/// `Exclusive Shelf` as its status (`to-read`, `currently-reading`, `read`, and the options'
/// did-not-finish shelf); `Date Read` as a finish on that local date; `My Rating` (0 = none);
/// `My Review` and `Private Notes` as memos. The export dates only the last read, so a
/// `Read Count` above 1 is reported; earlier reads are not invented.
enum GoodreadsImporter {
    static let required = ["Book Id", "Title", "Author", "Exclusive Shelf", "Date Read", "Date Added"]

    static func read(_ csv: CSVTable.Source, options: ImportOptions, progress: ImportProgress?) throws(ImportError) -> ImportResult {
        try ImportPlan.readCSV(csv, source: .goodreads, describedAs: "a Goodreads library export", required: required, options: options,
                               progress: progress, row: importRow)
    }

    private static func importRow(_ row: CSVTable.Row, _ table: CSVTable, _ plan: inout ImportPlan) {
        let line = row.line
        let bookID = table.value("Book Id", in: row)
        guard !bookID.isEmpty else { plan.skip("Book Id: empty; a row needs Goodreads' book id", line: line); return }
        guard plan.isFirstRow(identity: bookID, column: "Book Id", fields: row.fields, line: line) else { return }
        var book = plan.book(identity: "goodreads:\(bookID)", line: line)
        let title = table.value("Title", in: row)
        book.title = title

        // Metadata.
        var authors = table.value("Author", in: row)
        let additional = table.value("Additional Authors", in: row)
        if !additional.isEmpty { authors += authors.isEmpty ? additional : ", " + additional }
        var isbn: ISBN13?
        let isbnText = unwrapExcelText(table.value("ISBN13", in: row))
        if !isbnText.isEmpty {
            do { isbn = try ISBN13(isbnText) } catch { plan.warn("ISBN13 \(ReportText.quoted(isbnText)) not kept: \(error)", line: line) }
        }
        let pagesText = table.value("Number of Pages", in: row)
        var pages = Int(pagesText)
        if pages == 0 { pages = nil }
        if !pagesText.isEmpty, pages == nil, pagesText != "0" { plan.warn("Number of Pages \(ReportText.quoted(pagesText)) is not a number; not kept", line: line) }
        let publisher = table.value("Publisher", in: row)
        let metadata = BookMetadata(title: title, authors: authors, publisher: publisher.isEmpty ? nil : publisher,
                                    isbn13: isbn, pageCount: pages)

        // Dates: local calendar days, never through the machine's zone.
        let addedText = table.value("Date Added", in: row), readText = table.value("Date Read", in: row)
        let added = LocalDays.parse(addedText)
        if !addedText.isEmpty, added == nil { plan.warn("Date Added \(ReportText.quoted(addedText)) is not a date (YYYY/MM/DD); ignored", line: line) }
        var finished = LocalDays.parse(readText)
        if !readText.isEmpty, finished == nil { plan.warn("Date Read \(ReportText.quoted(readText)) is not a date (YYYY/MM/DD); ignored", line: line) }
        guard let addedOn = added ?? finished else {
            plan.skip("\(title): Date Added and Date Read are both empty; the book cannot be placed in time", line: line)
            return
        }
        let addedAt = plan.noon(of: addedOn)

        let shelf = table.value("Exclusive Shelf", in: row).lowercased()
        let isDNF = shelf == plan.options.didNotFinishShelf.lowercased()
        let status: ReadingStatus
        switch shelf {
        case "to-read": status = .wantToRead
        case "currently-reading", "read": status = .reading
        default:
            if isDNF { status = .didNotFinish } else {
                status = .wantToRead
                plan.warn("\(title): exclusive shelf \(ReportText.quoted(shelf)) is not to-read, currently-reading, read or the did-not-finish shelf \(ReportText.quoted(plan.options.didNotFinishShelf)); imported as want to read", line: line)
            }
        }
        // The did-not-finish shelf is a status change of its own (role `status:did-not-finish`), so
        // a re-import with `--dnf-shelf` naming a shelf an earlier import did not know corrects
        // the stored book through the decide step instead of meeting the stored `added` event.
        guard plan.run(.addBook(metadata, status: isDNF ? .wantToRead : status), &book, role: "added", at: addedAt, line: line) else { return }
        if isDNF { plan.run(.setStatus(.didNotFinish), &book, role: "status:did-not-finish", at: addedAt, line: line) }

        if shelf == "read" {
            if finished == nil {
                switch plan.options.undatedFinish {
                case .leaveUnfinished:
                    plan.warn("\(title): shelved read without a Date Read; left unfinished (option: finish on the date added)", line: line)
                case .finishOnDateAdded:
                    finished = added
                    plan.warn("\(title): shelved read without a Date Read; finished on the date added \(addedOn) (flagged)", line: line)
                }
            }
            if let finished {
                plan.run(.finishBook(on: finished), &book, role: "finished:\(finished)", at: plan.noon(of: finished), line: line)
            }
            let readCount = Int(table.value("Read Count", in: row)) ?? 1
            if readCount > 1 {
                plan.warn("\(title): read \(readCount) times; the export dates only the last read, so \(readCount - 1) earlier read\(readCount > 2 ? "s were" : " was") not imported", line: line)
            }
        } else if finished != nil, !isDNF {
            plan.warn("\(title): Date Read \(ReportText.quoted(readText)) on a book shelved \(ReportText.quoted(shelf)); the shelf wins, no finish imported", line: line)
        }

        let ratingText = table.value("My Rating", in: row)
        if let stars = Double(ratingText), stars > 0 {
            plan.run(.setRating(stars: stars), &book, role: "rating:\(ratingText)", at: plan.noon(of: finished ?? addedOn), line: line)
        } else if !ratingText.isEmpty, Double(ratingText) == nil {
            plan.warn("My Rating \(ReportText.quoted(ratingText)) is not a number; not kept", line: line)
        }
        let noteDay = plan.noon(of: finished ?? addedOn)
        for (column, role) in [("My Review", "review"), ("Private Notes", "notes")] {
            let text = table.rawValue(column, in: row)
            guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { continue }
            let memo = MemoID(plan.derivedUUID(["memo", book.identity, role]))
            plan.run(.writeMemo(memo, text: text, page: nil), &book, role: role, at: noteDay, line: line)
        }
        plan.finish(book)
    }

    /// `="9780141439518"` (Excel's "keep as text" wrapper Goodreads writes) → `9780141439518`.
    static func unwrapExcelText(_ value: String) -> String {
        var text = value
        if text.hasPrefix("=") { text.removeFirst() }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        return text.trimmingCharacters(in: .whitespaces)
    }
}
