import Foundation
import Plot
import Projections
import ReadingEvents

/// The charts of the report page, one function each; each draws only what ``ReportData`` holds.
enum Charts {
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func minutes(_ m: Int) -> String { m >= 60 ? "\(m / 60) h \(m % 60) min" : "\(m) min" }

    // MARK: Page calendar

    /// Shade level 0 ... 4 of a day's pages against the year's busiest day.
    static func level(_ pages: Int, max: Int) -> Int { pages <= 0 || max <= 0 ? 0 : min(4, 1 + 4 * (pages - 1) / max) }

    static func calendar(_ data: ReportData) -> BodyNode {
        let cell = 12.0, gap = 2.0, left = 26.0, top = 16.0
        let first = data.calendar.first!.day
        // Weeks start on Monday; column 0 holds 1 January.
        let offset = (first.dayNumber + 3) % 7  // 1970-01-01 was a Thursday (3 after Monday)
        let maxPages = data.calendar.map(\.pages).max() ?? 0
        var nodes: [BodyNode] = []
        for (i, day) in data.calendar.enumerated() {
            let slot = i + (offset + 7) % 7
            let x = left + Double(slot / 7) * (cell + gap), y = top + Double(slot % 7) * (cell + gap)
            let cls = "day l\(level(day.pages, max: maxPages))" + (day.isToday ? " today" : "")
            nodes.append(SVG.rect(x: x, y: y, w: cell, h: cell,
                                  [("class", cls), ("rx", "2"), ("data-date", day.day.description), ("data-pages", String(day.pages)),
                                   ("data-minutes", String(day.minutes))],
                                  title: "\(day.day): \(day.pages) pages, \(minutes(day.minutes))" + (day.isToday ? " (today)" : "")))
            if day.day.day == 1 {
                nodes.append(SVG.text(x: x, y: top - 5, monthNames[day.day.month - 1], cls: "label"))
            }
        }
        for (row, name) in [(0, "Mon"), (2, "Wed"), (4, "Fri")] {
            nodes.append(SVG.text(x: 0, y: top + Double(row) * (cell + gap) + 10, name))
        }
        let columns = Double((data.calendar.count + (offset + 7) % 7 + 6) / 7)
        let readingDays = data.calendar.filter { $0.pages > 0 || $0.minutes > 0 }.count
        let todayText = data.calendar.contains(where: \.isToday) ? " Today (\(data.today)) is outlined." : ""
        return figure(
            id: "calendar", title: "Page calendar \(data.year)",
            description: "One square per day of \(data.year) (\(data.calendar.count) days), darker for more pages; \(readingDays) reading days, the busiest with \(maxPages) pages.\(todayText)",
            wide: true, width: left + columns * (cell + gap), height: top + 7 * (cell + gap),
            drawing: nodes, headers: ["Day", "Pages", "Minutes"],
            rows: data.calendar.filter { $0.pages > 0 || $0.minutes > 0 }.map { [$0.day.description, String($0.pages), String($0.minutes)] },
            numeric: [1, 2])
    }

    // MARK: Bars

    /// Vertical bars with an axis, labels under some bars.
    static func bars(values: [Int], labels: [String], labelEvery: Int, width: Double, height: Double, top: Double = 14,
                     cls: [String], titles: [String], data: [[(String, String)]]) -> [BodyNode] {
        let bottom = 18.0, plot = height - top - bottom
        let maxValue = max(1, values.max() ?? 1)
        let step = width / Double(max(1, values.count))
        var nodes: [BodyNode] = [SVG.line(0, top + plot, width, top + plot, cls: "axis"),
                                 SVG.line(0, top, width, top, cls: "axis"),
                                 SVG.text(x: width, y: top - 3, "\(maxValue)", anchor: "end")]
        for (i, v) in values.enumerated() {
            let h = plot * Double(v) / Double(maxValue)
            nodes.append(SVG.rect(x: Double(i) * step + step * 0.15, y: top + plot - h, w: step * 0.7, h: h,
                                  [("class", cls[i])] + data[i], title: titles[i]))
            if i % labelEvery == 0 || (i == values.count - 1 && i % labelEvery > labelEvery / 2) {
                nodes.append(SVG.text(x: Double(i) * step + step / 2, y: height - 4, labels[i], anchor: "middle"))
            }
        }
        return nodes
    }

    static func dailyBars(_ data: ReportData) -> BodyNode {
        let days = data.dailyBars
        let total = days.reduce(0) { $0 + $1.pages }
        return figure(
            id: "daily", title: "Daily pages",
            description: "Pages per day from \(days.first!.day) to \(days.last!.day): \(total) pages in \(days.count) days.",
            width: 440, height: 150,
            drawing: bars(values: days.map(\.pages), labels: days.map { String($0.day.description.suffix(5)) }, labelEvery: 7,
                          width: 440, height: 150, cls: days.map { $0.isToday ? "bar today" : "bar" },
                          titles: days.map { "\($0.day): \($0.pages) pages" },
                          data: days.map { [("data-date", $0.day.description), ("data-pages", String($0.pages))] }),
            headers: ["Day", "Pages", "Minutes"], rows: days.map { [$0.day.description, String($0.pages), String($0.minutes)] },
            numeric: [1, 2])
    }

    static func monthly(_ data: ReportData) -> BodyNode {
        let months = data.monthly
        var nodes = bars(values: months.map(\.pages), labels: months.map { monthNames[$0.month.month - 1] }, labelEvery: 1,
                         width: 440, height: 170, top: 40, cls: months.map { _ in "bar" },
                         titles: months.map { "\($0.month): \($0.pages) pages, \($0.finishes) finished" },
                         data: months.map { [("data-month", $0.month.description), ("data-pages", String($0.pages))] })
        let step = 440.0 / 12
        for (i, m) in months.enumerated() where m.finishes > 0 {
            nodes.append(SVG.el("circle", [("cx", SVG.n(Double(i) * step + step / 2)), ("cy", "20"), ("r", SVG.n(4 + Double(min(m.finishes, 6)))),
                                           ("class", "finish"), ("data-finishes", String(m.finishes))],
                                [SVG.el("title", [], [.text("\(m.month): \(m.finishes) finished")])]))
            nodes.append(SVG.text(x: Double(i) * step + step / 2, y: 24, String(m.finishes), anchor: "middle", cls: "count"))
        }
        return figure(
            id: "monthly", title: "Monthly pages and finishes",
            description: "Bars: pages read each month of \(data.year). Circles: books finished that month (\(months.reduce(0) { $0 + $1.finishes }) finishes in all; a re-read counts again).",
            width: 440, height: 170, drawing: nodes, headers: ["Month", "Pages", "Finished"],
            rows: months.map { [$0.month.description, String($0.pages), String($0.finishes)] }, numeric: [1, 2])
    }

    static func timeOfDay(_ data: ReportData) -> BodyNode {
        let names = ["Night 0–6", "Morning 6–12", "Afternoon 12–18", "Evening 18–24"]
        let points = data.timeOfDay
        let maxPages = max(1, points.map(\.pages).max() ?? 1), maxMinutes = max(1, points.map(\.minutes).max() ?? 1)
        var nodes: [BodyNode] = []
        for (i, p) in points.enumerated() {
            let y = 8 + Double(i) * 36
            nodes.append(SVG.text(x: 0, y: y + 12, names[i], cls: "label"))
            let wp = 300 * Double(p.pages) / Double(maxPages), wm = 300 * Double(p.minutes) / Double(maxMinutes)
            nodes.append(SVG.rect(x: 110, y: y, w: wp, h: 12, [("class", "bar"), ("data-pages", String(p.pages))], title: "\(names[i]): \(p.pages) pages"))
            nodes.append(SVG.text(x: 114 + wp, y: y + 10, "\(p.pages) p"))
            nodes.append(SVG.rect(x: 110, y: y + 14, w: wm, h: 12, [("class", "bar minutes"), ("data-minutes", String(p.minutes))],
                                  title: "\(names[i]): \(minutes(p.minutes))"))
            nodes.append(SVG.text(x: 114 + wm, y: y + 24, minutes(p.minutes)))
        }
        return figure(
            id: "timeofday", title: "Time of day",
            description: "Pages (green) and timed minutes (blue) by time of day, all time, in each reading's own zone.",
            width: 460, height: 150, drawing: nodes, headers: ["Time of day", "Pages", "Minutes"],
            rows: points.enumerated().map { [names[$0.offset], String($0.element.pages), String($0.element.minutes)] }, numeric: [1, 2])
    }

    // MARK: Streaks

    static func streaks(_ data: ReportData) -> BodyNode {
        let width = 440.0, days = Double(data.calendar.count)
        let first = data.calendar.first!.day
        var nodes: [BodyNode] = [SVG.line(0, 30, width, 30, cls: "axis")]
        for (m, name) in monthNames.enumerated() {
            let d = try! LocalDate(year: first.year, month: m + 1, day: 1)
            let x = width * Double(first.days(until: d)) / days
            nodes.append(SVG.line(x, 26, x, 34, cls: "axis"))
            nodes.append(SVG.text(x: x + 2, y: 48, name))
        }
        for run in data.streakRuns {
            let x = width * Double(first.days(until: run.start)) / days
            nodes.append(SVG.rect(x: x, y: 20, w: max(1.5, width * Double(run.length) / days), h: 20,
                                  [("class", "run"), ("data-start", run.start.description), ("data-length", String(run.length))],
                                  title: "\(run.start) – \(run.end): \(run.length) days"))
        }
        if data.calendar.contains(where: \.isToday) {
            let x = width * (Double(first.days(until: data.today)) + 0.5) / days
            nodes.append(SVG.line(x, 12, x, 40, cls: "todayline"))
            nodes.append(SVG.text(x: x, y: 10, "today", anchor: "middle"))
        }
        let longest = data.streakRuns.map(\.length).max() ?? 0
        return figure(
            id: "streaks", title: "Reading streaks",
            description: "Runs of consecutive reading days in \(data.year) on a timeline: \(data.streakRuns.count) runs, the longest \(longest) days.",
            width: width, height: 56, drawing: nodes, headers: ["From", "To", "Days"],
            rows: data.streakRuns.map { [$0.start.description, $0.end.description, String($0.length)] }, numeric: [2])
    }

    // MARK: Categories

    static func categories(_ data: ReportData) -> BodyNode {
        let top = data.categories.topLevel.filter { $0.finishedBooks > 0 || $0.pages > 0 }
        let full = data.categories.fullPath.filter { $0.finishedBooks > 0 || $0.pages > 0 }
        let maxBooks = max(1, top.map(\.finishedBooks).max() ?? 1)
        func name(_ c: String) -> String { c.isEmpty ? "(no category)" : c }
        var nodes: [BodyNode] = []
        var y = 0.0
        // First level: the totals the test sums (rect.category); then each full path, thinner.
        for (level, totals) in [("first", top), ("full", full)] {
            nodes.append(SVG.text(x: 0, y: y + 11, level == "first" ? "First level" : "Full path"))
            y += 16
            for c in totals {
                let w = 200 * Double(c.finishedBooks) / Double(maxBooks)
                let h = level == "first" ? 16.0 : 10.0
                let label = level == "first" ? name(c.category) : name(c.category).split(separator: ">").dropFirst().joined(separator: " › ")
                nodes.append(SVG.text(x: 0, y: y + h - 3, label.isEmpty ? name(c.category) : label, cls: "label"))
                nodes.append(SVG.rect(x: 170, y: y, w: w, h: h,
                                      [("class", level == "first" ? "category" : "category path"), ("data-category", c.category),
                                       ("data-books", String(c.finishedBooks)), ("data-pages", String(c.pages))],
                                      title: "\(name(c.category)): \(c.finishedBooks) books, \(c.pages) pages"))
                nodes.append(SVG.text(x: 174 + w, y: y + h - 3, "\(c.finishedBooks) · \(c.pages) p"))
                y += h + 6
            }
            y += 6
        }
        return figure(
            id: "categories", title: "Finished books by category",
            description: "Books finished in \(data.year) and pages read, by the first level of the category path and by the full path: \(data.categories.finishedBooks) books, \(data.categories.pages) pages. A book counts once a year, under its current category.",
            width: 460, height: max(28, y), drawing: nodes,
            headers: ["Category", "Level", "Books finished", "Pages"],
            rows: top.map { [name($0.category), "first", String($0.finishedBooks), String($0.pages)] }
                + full.map { [name($0.category), "full path", String($0.finishedBooks), String($0.pages)] },
            numeric: [2, 3])
    }

    // MARK: Challenge

    static func challenge(_ data: ReportData) -> BodyNode {
        let c = data.challenge
        let usePages = c.challenge?.pages != nil || c.challenge?.books == nil
        let width = 440.0, height = 170.0, top = 12.0, plot = 140.0
        let target = Double(usePages ? (c.challenge?.pages ?? 0) : (c.challenge?.books ?? 0))
        let done = data.pace.map { Double(usePages ? $0.cumulativePages : $0.cumulativeBooks) }
        let maxY = max(1, target, done.max() ?? 0)
        func x(_ i: Int) -> Double { width * Double(i + 1) / Double(c.daysInYear) }
        func y(_ v: Double) -> Double { top + plot - plot * v / maxY }
        var nodes: [BodyNode] = [SVG.line(0, top + plot, width, top + plot, cls: "axis"), SVG.text(x: 0, y: 10, "\(Int(maxY))")]
        if target > 0 { nodes.append(SVG.polyline([(0, y(0)), (width, y(target))], cls: "pace")) }
        if !done.isEmpty {
            nodes.append(SVG.polyline([(0, y(0))] + done.enumerated().map { (x($0.offset), y($0.element)) }, cls: "actual"))
        }
        if (1...c.daysInYear).contains(c.elapsedDays), c.elapsedDays < c.daysInYear {
            nodes.append(SVG.line(x(c.elapsedDays - 1), top, x(c.elapsedDays - 1), top + plot, cls: "todayline"))
        }
        for (m, name) in monthNames.enumerated() where m % 2 == 0 {
            let d = try! LocalDate(year: data.calendar.first!.day.year, month: m + 1, day: 1)
            nodes.append(SVG.text(x: width * Double(data.calendar.first!.day.days(until: d)) / Double(c.daysInYear), y: height - 4, name))
        }
        func sentence(_ p: ChallengePace?, _ unit: String) -> String {
            guard let p else { return "" }
            let side = p.aheadBy >= 0 ? "\(p.aheadBy) \(unit) ahead of" : "\(-p.aheadBy) \(unit) behind"
            return " \(unit.capitalized): \(p.done) of \(p.target), \(side) the pace (\(p.expectedByToday) by today), on course for \(p.projectedTotal)."
        }
        let set = c.challenge == nil ? " No challenge is set for \(c.year); the line shows the reading so far." : ""
        var rows: [[String]] = []
        for (name, p) in [("books", c.books), ("pages", c.pages)] {
            if let p { rows.append([name, String(p.target), String(p.done), String(p.expectedByToday), String(p.aheadBy), String(p.projectedTotal)]) }
        }
        if rows.isEmpty { rows = [["books", "–", String(c.booksFinished), "–", "–", "–"], ["pages", "–", String(c.pagesRead), "–", "–", "–"]] }
        return figure(
            id: "challenge", title: "\(c.year) challenge",
            description: "Cumulative \(usePages ? "pages" : "books") (solid) against an even pace to the target (dashed), day \(c.elapsedDays) of \(c.daysInYear).\(sentence(c.books, "books"))\(sentence(c.pages, "pages"))\(set)",
            width: width, height: height, drawing: nodes,
            headers: ["Target", "Goal", "Done", "Pace by today", "Ahead (+) / behind (−)", "Projected"],
            rows: rows, numeric: [1, 2, 3, 4, 5])
    }

    // MARK: Year in review

    static func review(_ data: ReportData) -> BodyNode {
        let r = data.review
        let items: [(String, String)] = [
            ("Books finished", String(r.booksFinished)), ("Pages", String(r.pages)), ("Reading time", minutes(r.minutes)),
            ("Longest streak", r.longestStreak.map { "\($0.length) days (\($0.start) – \($0.end))" } ?? "–"),
            ("Most-read month", r.mostReadMonth.map { "\(monthNames[$0.month.month - 1]) (\($0.pages) pages)" } ?? "–"),
            ("Fastest book", r.fastestBook.map { "\($0.title) (\($0.days ?? 0) days)" } ?? "–"),
            ("Longest book", r.longestBook.map { "\($0.title) (\($0.pageCount.map(String.init) ?? "?") pages)" } ?? "–"),
            ("Average rating", r.averageRating.map { String(format: "%.2f ★", $0) } ?? "–"),
            ("Favourite category", r.favouriteCategory.map { $0.isEmpty ? "(no category)" : $0 } ?? "–"),
        ]
        let width = 1000.0
        let maxValue = Double(max(1, r.booksFinished, data.challenge.challenge?.books ?? 0))
        let drawing: [BodyNode] = [
            SVG.rect(x: 0, y: 6, w: width, h: 14, [("class", "progress")]),
            SVG.rect(x: 0, y: 6, w: width * Double(r.booksFinished) / maxValue, h: 14, [("class", "progress done"), ("data-books", String(r.booksFinished))],
                     title: "\(r.booksFinished) books finished"),
            SVG.text(x: 0, y: 34, "\(r.booksFinished) books" + (data.challenge.challenge?.books.map { " of \($0)" } ?? ""), cls: "label"),
        ]
        // The numbers also as a definition list under the drawing (the table stays behind <details>).
        let list: BodyNode = .element(named: "dl", nodes: [.class("review")]
            + items.flatMap { [BodyNode.element(named: "dt", text: $0.0), .element(named: "dd", text: $0.1)] })
        return figure(
            id: "review", title: "\(r.year) in review",
            description: "\(r.booksFinished) books and \(r.pages) pages in \(r.year), \(minutes(r.minutes)) of timed reading.",
            wide: true, width: width, height: 40, drawing: drawing, extra: [list], headers: ["", "\(r.year)"],
            rows: items.map { [$0.0, $0.1] })
    }

    // MARK: Shelf

    static func shelf(_ data: ReportData) -> BodyNode {
        let spines = data.shelf
        let scale = 1.6  // px per millimetre
        let width = 440.0
        var y = 0.0
        var nodes: [BodyNode] = []
        let fills = ["#e0772b", "#3b7dd8", "#4fa74a", "#b5568f", "#c9a227", "#5a6acf", "#2a9d8f"]
        for (i, s) in spines.reversed().enumerated() {  // the latest on top
            let h = max(4, s.heightMillimetres * scale)
            let w = width * (0.7 + 0.3 * Double((i * 37) % 10) / 10)
            nodes.append(SVG.rect(x: (width - w) / 2, y: y, w: w, h: h,
                                  [("class", "spine"), ("fill", fills[i % fills.count]), ("data-pages", String(s.pageCount ?? 0))],
                                  title: "\(s.title): \(s.pageCount.map(String.init) ?? "?") pages, finished \(s.lastFinished)"))
            if h >= 11 { nodes.append(SVG.el("text", [("x", SVG.n(width / 2)), ("y", SVG.n(y + h / 2 + 4)), ("text-anchor", "middle"), ("style", "fill:#fff")], [.text(s.title)])) }
            y += h
        }
        let total = spines.reduce(0) { $0 + $1.heightMillimetres }
        return figure(
            id: "shelf", title: "Bookshelf stack",
            description: "Every finished book as a spine, as thick as its pages (0.06 mm a page unless the thickness is known): \(spines.count) books, \(Int(total.rounded())) mm stacked.",
            width: width, height: max(20, y), drawing: nodes, headers: ["Title", "Pages", "Last finished", "Rating"],
            rows: spines.map { [$0.title, $0.pageCount.map(String.init) ?? "–", $0.lastFinished.description, $0.rating.map { "\($0.stars)" } ?? "–"] },
            numeric: [1])
    }

    // MARK: Reading speed

    /// Pages per hour as text: one decimal, or "–" without a speed.
    static func speed(_ total: SpeedTotal) -> String {
        total.pagesPerHour.map { String(format: "%.1f", $0) } ?? "–"
    }

    /// Seconds as hours and minutes, rounded to the minute.
    static func duration(seconds: Int) -> String { minutes((seconds + 30) / 60) }

    static func readingSpeed(_ data: ReportData) -> BodyNode {
        let view = data.readingSpeed
        let months = (1...12).map { YearMonth(year: data.year, month: $0) }
        let totals = months.map { view.total(of: $0) }
        let perHour = totals.map { Int(($0.pagesPerHour ?? 0).rounded()) }
        let drawing = bars(values: perHour, labels: months.map { monthNames[$0.month - 1] }, labelEvery: 1,
                           width: 440, height: 150, cls: months.map { _ in "bar" },
                           titles: zip(months, totals).map { "\($0): \(speed($1)) pages an hour (\($1.pages) pages in \(duration(seconds: $1.seconds)), \($1.sessions) sessions)" },
                           data: zip(months, perHour).map { [("data-month", $0.description), ("data-pages-per-hour", String($1))] })
        let sessionsInYear = totals.reduce(0) { $0 + $1.sessions }
        let overall = view.overall.sessions == 0
            ? "No timed session has ended on a page yet."
            : "All time: \(speed(view.overall)) pages an hour over \(view.overall.sessions) sessions (\(view.overall.pages) pages in \(duration(seconds: view.overall.seconds)))."
        return figure(
            id: "speed", title: "Reading speed",
            description: "Pages an hour each month of \(data.year), from timed sessions that ended on a page and ran a minute or more (\(sessionsInYear) in \(data.year)). \(overall)",
            width: 440, height: 150, drawing: drawing,
            headers: ["Month", "Sessions", "Pages", "Minutes", "Pages an hour"],
            rows: zip(months, totals).map { [$0.description, String($1.sessions), String($1.pages), String(($1.seconds + 30) / 60), speed($1)] },
            numeric: [1, 2, 3, 4])
    }

    /// The reading time left of each book on the home list, as horizontal bars.
    static func timeLeft(_ data: ReportData) -> BodyNode {
        let items = data.readingSpeed.timeLeft
        let width = 440.0, labelWidth = 170.0
        let longest = max(1, items.compactMap(\.seconds).max() ?? 1)
        var nodes: [BodyNode] = []
        for (i, item) in items.enumerated() {
            let y = Double(i) * 22
            nodes.append(SVG.text(x: 0, y: y + 12, item.title, cls: "label"))
            guard let seconds = item.seconds else {
                nodes.append(SVG.text(x: labelWidth, y: y + 12, item.pagesLeft == nil ? "page count unknown" : "no speed yet"))
                continue
            }
            let w = (width - labelWidth - 70) * Double(seconds) / Double(longest)
            nodes.append(SVG.rect(x: labelWidth, y: y + 3, w: w, h: 12,
                                  [("class", "bar minutes"), ("data-seconds-left", String(seconds))],
                                  title: "\(item.title): \(duration(seconds: seconds)) left for \(item.pagesLeft ?? 0) pages"))
            nodes.append(SVG.text(x: labelWidth + w + 4, y: y + 12, duration(seconds: seconds)))
        }
        return figure(
            id: "timeleft", title: "Time left at your speed",
            description: items.isEmpty ? "No book has an active goal."
                : "The reading time each book with a goal has left: its pages left at its own pages an hour, or at the speed of all your timed sessions when it has none.",
            width: width, height: max(20, Double(items.count) * 22), drawing: nodes,
            headers: ["Title", "Pages left", "Time left", "Speed of"],
            rows: items.map { item in
                [item.title, item.pagesLeft.map(String.init) ?? "–", item.seconds.map { duration(seconds: $0) } ?? "–",
                 item.basis.map { $0 == .book ? "this book" : "all books" } ?? "–"]
            },
            numeric: [1])
    }

    // MARK: Home list

    static func home(_ data: ReportData) -> BodyNode {
        let items = data.home.items
        let width = 440.0
        var nodes: [BodyNode] = []
        for (i, item) in items.enumerated() {
            let y = Double(i) * 34
            let dday = item.daysLeft == 0 ? "D-day" : item.daysLeft > 0 ? "D-\(item.daysLeft)" : "D+\(-item.daysLeft)"
            nodes.append(SVG.text(x: 0, y: y + 12, item.metadata.title, cls: "label"))
            nodes.append(SVG.text(x: width, y: y + 12, dday, anchor: "end", cls: "label"))
            nodes.append(SVG.rect(x: 0, y: y + 17, w: width, h: 8, [("class", "progress")]))
            nodes.append(SVG.rect(x: 0, y: y + 17, w: width * (item.progress ?? 0), h: 8,
                                  [("class", "progress done"), ("data-days-left", String(item.daysLeft))],
                                  title: "\(item.metadata.title): page \(item.position), \(dday)"))
        }
        return figure(
            id: "home", title: "Reading now",
            description: items.isEmpty ? "No book has an active goal." : "\(items.count) \(items.count == 1 ? "book" : "books") with a goal: progress bars and days to the target date (D-n; D+n once past).",
            width: width, height: max(20, Double(items.count) * 34), drawing: nodes,
            headers: ["Title", "Page", "Progress", "D-day", "Pages a day needed"],
            rows: items.map { item in
                [item.metadata.title, String(item.position), item.progress.map { "\(Int(($0 * 100).rounded())) %" } ?? "–",
                 item.daysLeft == 0 ? "D-day" : item.daysLeft > 0 ? "D-\(item.daysLeft)" : "D+\(-item.daysLeft)",
                 item.pagesPerDayNeeded.map(String.init) ?? "–"]
            },
            numeric: [1, 2, 4])
    }
}
