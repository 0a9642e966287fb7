import Foundation
import TestSupport
import Testing

/// `replay report`: the page opens in a real headless Chromium (Debian's `chromium`) with no
/// console errors, and the rendered DOM holds what the views hold; bad input writes nothing.
///
/// Without Chromium the browser test fails when `CI` is set (CI must install it, as `.ci/run`
/// does) and is skipped with a printed reason otherwise.
@Suite("Report page")
struct ReportBrowserTests {
    static let chromium: URL? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .map(URL.init(fileURLWithPath:)).first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// Chromium, or nil after recording an issue (when `CI` is set) or printing why the test is skipped.
    static func chromiumOrSkip() -> URL? {
        if let chromium { return chromium }
        if ProcessInfo.processInfo.environment["CI"] != nil {
            Issue.record("chromium is not installed; CI must install it (.ci/run installs Debian's chromium)")
        } else {
            print("ReportBrowserTests: skipped, no chromium (apt-get install -y chromium fonts-noto-cjk)")
        }
        return nil
    }

    /// Runs Chromium headless with `arguments`; returns its exit status, stdout and stderr.
    static func runChromium(_ chromium: URL, _ arguments: [String], in directory: CLITempDirectory) throws -> (Int32, String, String) {
        let out = directory.child("chromium.out"), err = directory.child("chromium.err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        defer { try? outHandle.close(); try? errHandle.close() }
        let process = Process()
        process.executableURL = chromium
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                             "--user-data-dir=\(directory.path("chromium-profile"))", "--enable-logging=stderr", "--v=0"] + arguments
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: try Data(contentsOf: out), as: UTF8.self),
                String(decoding: try Data(contentsOf: err), as: UTF8.self))
    }

    /// Every match of `pattern` in `text`, as the capture groups' strings.
    static func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let regex = try NSRegularExpression(pattern: pattern)
        let ns = text as NSString
        return regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { m in
            (1..<m.numberOfRanges).map { ns.substring(with: m.range(at: $0)) }
        }
    }

    /// The value of attribute `name` in one start tag.
    static func attribute(_ name: String, of tag: String) throws -> String? {
        try matches(" \(name)=\"([^\"]*)\"", in: tag).first?.first
    }

    /// The small demo store in `dir` and its first reader.
    static func demoReader(in dir: CLITempDirectory) throws -> (store: String, reader: String) {
        let store = dir.path("store")
        try makeDemoStore(at: store)
        return (store, try #require((try stats(of: store)["eventsPerReader"] as? [String: Any])?.keys.sorted().first))
    }

    @Test func theReportOfADemoReaderRendersInChromiumWithTheViewsNumbers() throws {
        guard let chromium = Self.chromiumOrSkip() else { return }
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (store, reader) = try Self.demoReader(in: dir)
        let page = dir.path("report.html")
        // The demo starts on 2025-01-01 and runs 40 days: "today" inside it.
        let asOf = "2025-02-05T21:00:00+09:00"
        let written = try replayOK(["report", "--store", store, "--reader", reader, "--year", "2025", "--as-of", asOf,
                                    "--zone", "Asia/Seoul", "--out", page])
        #expect(written.stdout.contains("wrote"))
        let html = try String(contentsOfFile: page, encoding: .utf8)
        // Self-contained: no script, nothing fetched.
        #expect(!html.contains("<script"))
        #expect(try Self.matches("(src|href)=\"", in: html).isEmpty)
        #expect(!html.contains("@import") && !html.contains("url("))

        let (status, dom, log) = try Self.runChromium(chromium, ["--dump-dom", "file://\(page)"], in: dir)
        #expect(status == 0, "chromium exit \(status): \(log.suffix(2000))")
        let consoleErrors = log.split(separator: "\n").filter {
            $0.contains("CONSOLE") || $0.contains("Uncaught") || $0.contains("Failed to load resource")
        }
        #expect(consoleErrors.isEmpty, "\(consoleErrors)")

        // One calendar square per day of 2025, each with the pages `show` gives for that day.
        let squares = try Self.matches("(<rect[^>]* class=\"day[^\"]*\"[^>]*>)", in: dom).map { $0[0] }
        #expect(squares.count == 365)
        var rendered: [String: Int] = [:]
        for tag in squares {
            let day = try #require(try Self.attribute("data-date", of: tag))
            rendered[day] = Int(try #require(try Self.attribute("data-pages", of: tag)))
        }
        #expect(rendered.count == 365 && rendered.keys.min() == "2025-01-01" && rendered.keys.max() == "2025-12-31")
        let shown = try #require(try replayOK(["show", "--store", store, "--reader", reader, "--as-of", asOf, "--zone", "Asia/Seoul",
                                               "--since", "2025-01-01", "--until", "2025-12-31", "--json"]).json() as? [[String: Any]])
        // `show` clamps the range to the reader's history: the days it leaves out have no pages.
        let daily = try #require(shown.first?["daily"] as? [[String: Any]])
        #expect(daily.count > 20 && daily.count <= 365)
        var withPages = 0
        var shownDays: Set<String> = []
        for entry in daily {
            let day = try #require(entry["day"] as? String), pages = try #require(entry["pages"] as? Int)
            #expect(rendered[day] == pages, "\(day)")
            shownDays.insert(day)
            if pages > 0 { withPages += 1 }
        }
        for (day, pages) in rendered where !shownDays.contains(day) { #expect(pages == 0, "\(day) is outside the history but has pages") }
        #expect(withPages > 20)
        // Today is marked, once.
        #expect(squares.filter { $0.contains(" today\"") }.map { try? Self.attribute("data-date", of: $0) } == ["2025-02-05"])

        // The first-level category totals sum to the books finished in 2025, counted here from the
        // exported events (each book once, an undone finish taken back).
        let categories = try Self.matches("(<rect[^>]* class=\"category\"[^>]*>)", in: dom).map { $0[0] }
        #expect(!categories.isEmpty)
        let categorySum = try categories.reduce(0) { $0 + Int(try #require(try Self.attribute("data-books", of: $1)))! }
        var finishes: [String: [String]] = [:]
        for event in try jsonLines(replayOK(["export", "--store", store, "--reader", reader]).stdout) {
            let data = event["data"] as? [String: Any], book = data?["book"] as? String ?? ""
            switch event["type"] as? String {
            case "BookFinished": finishes[book, default: []].append(data?["finishedOn"] as? String ?? "")
            case "FinishUndone": finishes[book]?.removeLast()
            default: break
            }
        }
        let finishedIn2025 = finishes.values.filter { $0.contains { $0.hasPrefix("2025-") } }.count
        #expect(finishedIn2025 > 0)
        #expect(categorySum == finishedIn2025)

        // Every chart has a title, a description and a data table behind <details>.
        let figures = try Self.matches("<figure id=\"([a-z]+)\"", in: dom).map { $0[0] }
        #expect(Set(figures) == ["review", "challenge", "calendar", "daily", "monthly", "timeofday", "streaks", "categories", "shelf", "home",
                                 "speed", "timeleft"])
        for id in figures {
            #expect(dom.contains("id=\"\(id)-title\"") && dom.contains("aria-describedby=\"\(id)-desc\""), "\(id)")
        }
        #expect(try Self.matches("<details>", in: dom).count == figures.count)

        // And a screenshot can be taken of it.
        let png = dir.path("report.png")
        let (shotStatus, _, shotLog) = try Self.runChromium(chromium, ["--screenshot=\(png)", "--window-size=1280,2400",
                                                                        "--hide-scrollbars", "file://\(page)"], in: dir)
        #expect(shotStatus == 0, "\(shotLog.suffix(1000))")
        let image = try Data(contentsOf: URL(fileURLWithPath: png))
        #expect(image.starts(with: [0x89, 0x50, 0x4E, 0x47]) && image.count > 20_000)
    }

    /// The nickname went unescaped into the `og:title` and `twitter:title` attribute values (Plot's
    /// `.title` writes attributes as given), so `"><img src=x onerror=…>` ran in Chromium. A reader
    /// whose every text field (nickname, titles, subtitles, authors, publishers, category paths,
    /// sentences, memos) holds an injection payload now gets a page whose DOM, as Chromium parsed
    /// it, has no injected element or attribute, and shows the payloads as text.
    @Test func injectionPayloadsInEveryTextFieldStayText() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (store, reader) = try Self.demoReader(in: dir)
        // Injected, each of these would serialize with quoted attribute values; as text or inside an
        // escaped attribute value they cannot (quotes there become &quot;, or stay without the `="`).
        let short = #""'><b id=pwn>x</b><img src=x onerror=1>"#   // 39 characters: within the nickname limit
        let long = #"</title></style>"'><b id=pwn>x</b><img src=x onerror=alert(1)><svg onload=alert(1)>&amp;&#34;"#
        #expect(short.count <= 40)
        let fields: [String: String] = ["nickname": short, "title": long, "subtitle": long, "authors": long,
                                        "publisher": long, "categoryPath": long, "text": long]
        var poisoned = 0
        var lines: [String] = []
        for var event in try jsonLines(replayOK(["export", "--store", store, "--reader", reader]).stdout) {
            if var data = event["data"] as? [String: Any] {
                for (key, payload) in fields where data[key] is String { data[key] = payload; poisoned += 1 }
                if var metadata = data["metadata"] as? [String: Any] {
                    for (key, payload) in fields where metadata[key] is String { metadata[key] = payload; poisoned += 1 }
                    data["metadata"] = metadata
                }
                event["data"] = data
            }
            let line = try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])
            lines.append(String(decoding: line, as: UTF8.self))
        }
        #expect(poisoned > 10)
        let file = dir.child("poisoned.jsonl")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let poisonedStore = dir.path("poisoned")
        try replayOK(["import", "--store", poisonedStore, file.path])
        let page = dir.path("report.html")
        try replayOK(["report", "--store", poisonedStore, "--reader", reader, "--year", "2025",
                      "--as-of", "2025-02-05T21:00:00+09:00", "--zone", "Asia/Seoul", "--out", page])
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("og:title"), "the page keeps its sharing title")

        guard let chromium = Self.chromiumOrSkip() else { return }
        let (status, dom, log) = try Self.runChromium(chromium, ["--dump-dom", "file://\(page)"], in: dir)
        #expect(status == 0, "chromium exit \(status): \(log.suffix(2000))")
        for injected in [#"id="pwn""#, #"src="x""#, #"onerror=""#, #"onload=""#, "<svg onload", "<b id"] {
            #expect(!dom.contains(injected), "the DOM holds an injected \(injected)")
        }
        let images = try Self.matches("(<img)", in: dom), bolds = try Self.matches("(<b[ >])", in: dom)
        #expect(images.isEmpty && bolds.isEmpty, "injected elements: \(images) \(bolds)")
        #expect(!log.contains("Failed to load resource"), "an injected image was fetched")
        // The payloads are shown as text: the title and the header hold the nickname.
        #expect(dom.contains("<title>Reading report 2025 · \"'&gt;&lt;b id=pwn&gt;x&lt;/b&gt;&lt;img src=x onerror=1&gt;</title>"))
        #expect(dom.contains("&lt;/title&gt;&lt;/style&gt;"))
    }

    @Test func badInputIsAClearErrorAndWritesNothing() throws {
        let dir = try CLITempDirectory()
        defer { dir.remove() }
        let (store, reader) = try Self.demoReader(in: dir)
        let page = dir.path("report.html")
        let cases: [([String], Int32, String)] = [
            (["--reader", "00000000-0000-4000-8000-000000000000", "--out", page], 1, "reader"),
            (["--reader", reader, "--year", "2031", "--out", page], 1, "year"),
            (["--reader", reader, "--year", "0", "--out", page], 64, "--year"),
            (["--reader", reader, "--year", "-1", "--out", page], 64, "--year"),
            (["--reader", reader, "--out", dir.path("missing/report.html")], 1, "--out"),
            (["--reader", "not-a-uuid", "--out", page], 64, "--reader"),
            (["--reader", reader, "--zone", "Mars/Olympus", "--out", page], 64, "--zone"),
        ]
        for (arguments, status, field) in cases {
            let run = try replay(["report", "--store", store] + arguments)
            #expect(run.status == status, "\(run)")
            #expect(run.stderr.contains(field), "\(run)")
            #expect(!FileManager.default.fileExists(atPath: page), "\(arguments)")
            #expect(!FileManager.default.fileExists(atPath: dir.path("missing")))
        }
    }
}
