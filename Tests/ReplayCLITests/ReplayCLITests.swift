import EventStoreLMDB
import Foundation
import TestSupport
import Testing

// End-to-end tests of the built `replay` binary: every subcommand is run as a child process on a
// store in its own temporary directory, and its exit status, stdout and stderr are checked.

/// The dashboard section headings `show` (and `demo`) print for each reader.
let dashboardSections = ["Home (", "Bookshelf:", "Summary:", "Streaks:", "Page calendar", "Daily pages",
                         "Time of day", "Monthly"]

@Suite("replay demo")
struct DemoCommandTests {
    @Test("demo writes the history, prints the dashboard, and a second run adds nothing")
    func demoThenAgain() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let first = try replayOK(["demo", "--store", store] + demoArguments)
        for section in dashboardSections {
            #expect(first.stdout.components(separatedBy: section).count - 1 == 2,
                    "section \(section) once per reader")
        }
        #expect(first.stdoutLines.filter { $0.hasPrefix("━━ reader ") }.count == 2)
        // stderr: "demo: N events generated for 2 readers, N new, in T s"
        let summary = try #require(first.stderrLines.last)
        let match = try #require(summary.firstMatch(of: /^demo: (\d+) events generated for 2 readers, (\d+) new, in [\d.]+ s$/),
                                 "\(first)")
        let generated = try #require(Int(match.1)), written = try #require(Int(match.2))
        #expect(generated > 100)
        #expect(written == generated)

        let statsBefore = try stats(of: store)
        #expect(statsBefore["lastPosition"] as? Int == generated)
        #expect((statsBefore["eventsPerReader"] as? [String: Int])?.count == 2)

        let second = try replayOK(["demo", "--store", store] + demoArguments)
        #expect(second.stderrLines.last?.contains("\(generated) events generated for 2 readers, 0 new") == true, "\(second)")
        let statsAfter = try stats(of: store)
        #expect(statsAfter["lastPosition"] as? Int == generated)
        #expect(statsAfter["eventsPerType"] as? [String: Int] == statsBefore["eventsPerType"] as? [String: Int])
        // The dashboard does not depend on the clock: the same store shows the same text.
        let sameDashboard = second.stdout == first.stdout
        #expect(sameDashboard, "the second demo run shows a different dashboard")
    }

    @Test("demo --quiet writes the events but prints no dashboard")
    func demoQuiet() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let run = try replayOK(["demo", "--store", store, "--quiet"] + demoArguments)
        #expect(run.stdout.isEmpty, "\(run)")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.hasPrefix("demo: "))
        #expect(try lastPosition(of: store) > 100)
        // The same seed gives the same history in another store; another seed a different one.
        let twin = temp.path("twin"), other = temp.path("other")
        try replayOK(["demo", "--store", twin, "--quiet"] + demoArguments)
        try replayOK(["demo", "--store", other, "--quiet", "--seed", "7"] + demoArguments)
        let export = try replayOK(["export", "--store", store]).stdoutData
        #expect(try replayOK(["export", "--store", twin]).stdoutData == export)
        #expect(try replayOK(["export", "--store", other]).stdoutData != export)
    }

    @Test("demo rejects bad sizes with exit 64", arguments: [["--readers", "0"], ["--days", "0"], ["--days", "4000"], ["--events", "0"]])
    func demoValidation(arguments: [String]) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let run = try replay(["demo", "--store", store, "--quiet"] + arguments)
        #expect(run.status == 64, "\(run)")
        #expect(run.stderr.contains(arguments[0]))
        #expect(!FileManager.default.fileExists(atPath: store), "a usage error creates no store")
    }

    @Test("the store defaults to $READING_STORE, else ./reading-store")
    func defaultStore() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        // No --store and no READING_STORE: ./reading-store in the working directory.
        try replayOK(["demo", "--quiet", "--readers", "1", "--days", "5"], currentDirectory: temp.url)
        let local = temp.child("reading-store")
        #expect(FileManager.default.fileExists(atPath: local.appendingPathComponent("data.mdb").path))
        let localCount = try lastPosition(of: local.path)

        // READING_STORE wins over ./reading-store.
        let viaEnv = temp.path("env-store")
        try replayOK(["demo", "--quiet"] + demoArguments, environment: ["READING_STORE": viaEnv], currentDirectory: temp.url)
        let run = try replayOK(["stats", "--json"], environment: ["READING_STORE": viaEnv], currentDirectory: temp.url)
        let envCount = try #require(try run.jsonObject()["lastPosition"] as? Int)
        #expect(envCount == (try lastPosition(of: viaEnv)))
        #expect(envCount != localCount)
        #expect(try lastPosition(of: local.path) == localCount, "./reading-store was not written")
        // --store wins over READING_STORE.
        let explicit = try replayOK(["stats", "--json", "--store", local.path], environment: ["READING_STORE": viaEnv])
        #expect(try explicit.jsonObject()["lastPosition"] as? Int == localCount)
    }
}

@Suite("replay show")
struct ShowCommandTests {
    @Test("show prints every section for every reader, and --reader limits it to one")
    func showText() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let all = try replayOK(["show", "--store", store])
        let headers = all.stdoutLines.filter { $0.hasPrefix("━━ reader ") }
        #expect(headers.count == 2)
        for section in dashboardSections {
            #expect(all.stdout.components(separatedBy: section).count - 1 == 2, "\(section)")
        }
        #expect(all.stderr.isEmpty)
        let readers = try #require(try stats(of: store)["eventsPerReader"] as? [String: Int]).keys.sorted()
        let one = try replayOK(["show", "--store", store, "--reader", readers[1]])
        let oneHeaders = one.stdoutLines.filter { $0.hasPrefix("━━ reader ") }
        #expect(oneHeaders.count == 1)
        #expect(oneHeaders.first?.hasPrefix("━━ reader \(readers[1])") == true)
        for section in dashboardSections { #expect(one.stdout.contains(section)) }
        // The one-reader text is that reader's block of the full text.
        let isBlockOfAll = all.stdout.contains(one.stdout)
        #expect(isBlockOfAll, "show --reader is not that reader's block of the full dashboard")
    }

    @Test("show --json: the keys, consistent totals, and the text bars agree with the JSON")
    func showJSON() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store)
        let documents = try #require(try replayOK(["show", "--store", store, "--json"]).json() as? [[String: Any]])
        #expect(documents.count == 2)
        let expectedKeys: Set<String> = ["reader", "nickname", "zone", "today", "home", "bookshelf", "summary", "streaks",
                                         "calendar", "daily", "timeOfDay", "monthly", "openSessions", "readingSpeed"]
        var totalPagesAllReaders = 0
        for document in documents {
            #expect(Set(document.keys) == expectedKeys)
            let reader = try #require(document["reader"] as? String)
            let today = try #require(document["today"] as? String)
            let daily = try #require(document["daily"] as? [[String: Any]])
            let calendar = try #require(document["calendar"] as? [[String: Any]])
            let monthly = try #require(document["monthly"] as? [[String: Any]])
            let timeOfDay = try #require(document["timeOfDay"] as? [[String: Any]])
            let summary = try #require(document["summary"] as? [String: Any])
            // Default range: the 30 days ending today, one bar per day, in order.
            #expect(daily.count == 30)
            #expect(daily.last?["day"] as? String == today)
            let days = daily.compactMap { $0["day"] as? String }
            #expect(days == days.sorted() && Set(days).count == 30)
            // The calendar (26 weeks to today) agrees with the daily bars on their days.
            let calendarPages = Dictionary(uniqueKeysWithValues: calendar.map { ($0["day"] as! String, $0["pages"] as! Int) })
            #expect(calendar.last?["day"] as? String == today)
            #expect(calendar.count > 7 * 25 && calendar.count <= 7 * 26)
            let dailySum = daily.reduce(0) { $0 + ($1["pages"] as! Int) }
            #expect(dailySum > 0, "the demo reads in the last 30 days")
            #expect(dailySum == days.reduce(0) { $0 + (calendarPages[$1] ?? -1_000_000) })
            // The 40-day history lies inside the calendar and the 12 months: the same page total.
            let calendarSum = calendar.reduce(0) { $0 + ($1["pages"] as! Int) }
            let monthlySum = monthly.reduce(0) { $0 + ($1["pages"] as! Int) }
            let bucketSum = timeOfDay.reduce(0) { $0 + ($1["pages"] as! Int) }
            #expect(monthly.count == 12)
            #expect(calendarSum == monthlySum)
            #expect(calendarSum == bucketSum)
            #expect(summary["totalPages"] as? Int == calendarSum)
            totalPagesAllReaders += calendarSum

            // Reading speed: the books and the months each add up to the overall total, the
            // counted sessions' seconds are within the timed seconds, and each home-list book has
            // an estimate in the home list's order.
            let speed = try #require(document["readingSpeed"] as? [String: Any])
            #expect(Set(speed.keys) == ["overall", "months", "books", "timeLeft"])
            func sums(_ items: [[String: Any]]) -> [Int] {
                ["sessions", "pages", "seconds"].map { key in items.reduce(0) { $0 + (($1["speed"] as? [String: Any])?[key] as? Int ?? -1_000_000) } }
            }
            let overall = try #require(speed["overall"] as? [String: Any])
            let overallSums = ["sessions", "pages", "seconds"].map { overall[$0] as? Int ?? -1 }
            #expect(overallSums[0] > 0, "the demo's timed sessions end on a page")
            #expect(sums(try #require(speed["books"] as? [[String: Any]])) == overallSums)
            #expect(sums(try #require(speed["months"] as? [[String: Any]])) == overallSums)
            #expect(overallSums[2] <= summary["totalSeconds"] as? Int ?? -1)
            let perHour = try #require(overall["pagesPerHour"] as? Double)
            #expect(abs(perHour - Double(overallSums[1]) * 3600 / Double(overallSums[2])) <= 0.05)
            let home = try #require(document["home"] as? [[String: Any]])
            let timeLeft = try #require(speed["timeLeft"] as? [[String: Any]])
            #expect(timeLeft.map { $0["book"] as? String } == home.map { $0["book"] as? String })
            for (item, left) in zip(home, timeLeft) {
                #expect((left["pagesLeft"] as? Int) == (item["pagesLeft"] as? Int))
                if left["pagesLeft"] is Int { #expect(left["secondsLeft"] is Int && left["basis"] is String, "\(left)") }
            }

            // The text of the same reader shows the same daily bars.
            let text = try replayOK(["show", "--store", store, "--reader", reader]).stdoutLines
            let start = try #require(text.firstIndex { $0.hasPrefix("Daily pages ") })
            #expect(text[start] == "Daily pages \(days.first!) … \(today)")
            let bars = text[(start + 1)...].prefix { $0.hasPrefix("  ") }
            #expect(bars.count == 30)
            let parsed = bars.map { line -> (String, Int) in
                let fields = line.split(separator: " ")
                return (String(fields[0]), Int(fields[1]) ?? -1)
            }
            #expect(parsed.map(\.0) == days)
            #expect(parsed.map(\.1) == daily.map { $0["pages"] as! Int })
            // The text's reading-speed section: the all-time line of the same totals, a time-left
            // line per home-list book.
            let speedStart = try #require(text.firstIndex { $0.hasPrefix("Reading speed (") })
            let allTime = text[speedStart + 1].split(separator: " ")
            #expect(allTime.prefix(2) == ["all", "time"])
            #expect([Int(allTime[2]), Int(allTime[4])] == [overallSums[0], overallSums[1]], "\(text[speedStart + 1])")
            #expect(text[speedStart...].filter { $0.hasPrefix("  time left: ") }.count == home.count)
        }
        #expect(totalPagesAllReaders > 0)
        #expect(last > 0)
    }

    @Test("show --reader, --as-of, --since and --until select the reader, today and the daily range")
    func showOptions() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let reader = try #require(try stats(of: store)["eventsPerReader"] as? [String: Int]).keys.sorted()[0]
        let one = try #require(try replayOK(["show", "--store", store, "--json", "--reader", reader]).json() as? [[String: Any]])
        #expect(one.count == 1)
        #expect(one.first?["reader"] as? String == reader)
        let latestToday = try #require(one.first?["today"] as? String)

        let asOf = try #require(try replayOK(["show", "--store", store, "--json", "--reader", reader, "--as-of", "2025-01-20"])
            .json() as? [[String: Any]]).first
        #expect(asOf?["today"] as? String == "2025-01-20")
        #expect(latestToday != "2025-01-20")
        let daily = try #require(asOf?["daily"] as? [[String: Any]])
        #expect(daily.first?["day"] as? String == "2024-12-22")
        #expect(daily.last?["day"] as? String == "2025-01-20")
        // The demo starts on 2025-01-01: nothing is read before it.
        #expect(daily.filter { ($0["day"] as! String) < "2025-01-01" }.allSatisfy { $0["pages"] as? Int == 0 })
        #expect(daily.contains { ($0["pages"] as! Int) > 0 })

        let ranged = try #require(try replayOK(["show", "--store", store, "--json", "--reader", reader,
                                                "--since", "2025-01-05", "--until", "2025-01-11"]).json() as? [[String: Any]]).first
        let rangedDays = (ranged?["daily"] as? [[String: Any]] ?? []).compactMap { $0["day"] as? String }
        #expect(rangedDays == (5...11).map { String(format: "2025-01-%02d", $0) })

        let text = try replayOK(["show", "--store", store, "--reader", reader, "--as-of", "2025-01-20"])
        #expect(text.stdoutLines.first?.hasSuffix("today 2025-01-20") == true, "\(text)")
    }

    @Test("show: --since after --until, a bad date, zone or reader are usage errors (64)",
          arguments: [(["--since", "2025-02-01", "--until", "2025-01-01"], "--since"),
                      (["--as-of", "yesterday"], "--as-of"),
                      (["--zone", "Mars/Olympus"], "--zone"),
                      (["--reader", "not-a-uuid"], "--reader")])
    func showUsageErrors(arguments: [String], named: String) throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let run = try replay(["show", "--store", store] + arguments)
        #expect(run.status == 64, "\(run)")
        #expect(run.stdout.isEmpty)
        // The message is the first stderr line (ArgumentParser adds the usage after it).
        let first = try #require(run.stderrLines.first)
        #expect(first.hasPrefix("Error: "))
        #expect(first.contains(named))
        if arguments.first == "--since" {
            #expect(first == "Error: --since 2025-02-01 is after --until 2025-01-01")
        }
    }

    @Test("show --reader of a reader without events fails (exit 1, one line)")
    func showUnknownReader() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let stranger = UUID().uuidString.lowercased()
        let run = try replay(["show", "--store", store, "--reader", stranger])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderrLines.count == 1)
        #expect(run.stderr.contains("has no events"))
    }
}

@Suite("replay rebuild")
struct RebuildCommandTests {
    @Test("rebuild: the final line has count, time and rate; --json parses; --view days; the digest is unchanged")
    func rebuild() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store)
        let digestBefore = try #require(try verifyReport(of: store)["viewDigest"] as? String)

        let text = try replayOK(["rebuild", "--store", store])
        let line = try #require(text.stdoutLines.last)
        let match = try #require(line.firstMatch(of: /^rebuilt all views from (\d+) events in ([\d.]+) s \((\d+) events\/s\); digest (\S+)$/),
                                 "\(text)")
        #expect(Int(match.1) == last)
        #expect(Double(match.2) != nil)
        #expect((Int(match.3) ?? 0) > 0)
        #expect(String(match.4) == digestBefore)
        #expect(text.stderr.isEmpty, "no progress bar when stderr is not a terminal")

        let json = try replayOK(["rebuild", "--store", store, "--json"]).jsonObject()
        #expect(Set(json.keys) == ["events", "seconds", "eventsPerSecond", "digest", "view", "logEvents"])
        #expect(json["events"] as? Int == last)
        #expect(json["logEvents"] as? Int == last)
        #expect(json["view"] as? String == "all")
        #expect(json["digest"] as? String == digestBefore)
        #expect((json["seconds"] as? Double).map { $0 >= 0 } == true)

        let days = try replayOK(["rebuild", "--store", store, "--view", "days"])
        #expect(days.stdoutLines.last?.hasPrefix("rebuilt days from \(last) events in ") == true, "\(days)")
        let daysJSON = try replayOK(["rebuild", "--store", store, "--view", "days", "--json"]).jsonObject()
        #expect(daysJSON["view"] as? String == "days")

        let after = try verifyReport(of: store)
        #expect(after["ok"] as? Bool == true)
        #expect(after["viewDigest"] as? String == digestBefore)
        #expect(try lastPosition(of: store) == last, "a rebuild appends nothing")
    }

    /// Issue 37: `rebuild --jobs N` folds on N workers with the digest of `--jobs 1`; a number of
    /// jobs outside 1 ... 256 (or not a number) is refused when the command line is parsed: exit
    /// 64, one line naming the flag and the rule, and the views are not touched.
    @Test("rebuild --jobs N gives the digest of --jobs 1; --jobs 0 is refused naming the flag")
    func rebuildJobs() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store, extra: ["--readers", "12"])
        let digestBefore = try #require(try verifyReport(of: store)["viewDigest"] as? String)
        for jobs in ["1", "2", "3"] {
            let json = try replayOK(["rebuild", "--store", store, "--jobs", jobs, "--json"]).jsonObject()
            #expect(json["digest"] as? String == digestBefore, "--jobs \(jobs)")
            #expect(json["events"] as? Int == last, "--jobs \(jobs)")
        }
        for bad in ["0", "257", "-3", "two"] {
            let run = try replay(["rebuild", "--store", store, "--jobs=\(bad)"])
            #expect(run.status == 64, "--jobs \(bad): \(run)")
            let first = run.stderrLines.first ?? ""
            #expect(first.contains("is invalid for '--jobs <n>': not a number of fold workers in 1 ... 256"), "--jobs \(bad): \(run)")
            #expect(run.stdout.isEmpty, "--jobs \(bad): \(run)")
        }
        let help = try replayOK(["rebuild", "--help"])
        #expect(help.stdout.contains("--jobs <n>"), "\(help)")
        #expect(try verifyReport(of: store)["viewDigest"] as? String == digestBefore)
    }

    /// Issue 29: every name `rebuild --help` lists rebuilds (before, `--view years` was exit 64, and
    /// `--view books` rebuilt one of a book's six tables), and `verify` stays green after each.
    @Test("rebuild --view NAME works for every name its help lists, and verify stays green")
    func everyListedViewRebuilds() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let digest = try #require(try verifyReport(of: store)["viewDigest"] as? String)
        let help = try replayOK(["rebuild", "--help"]).stdout
        let values = try #require(help.firstMatch(of: /values: ([a-zA-Z,\s]+)\)/), "\(help)")
        let names = values.1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(names == ["books", "days", "bookDays", "months", "buckets", "runs", "readers", "goals", "years"])
        for name in names {
            let run = try replayOK(["rebuild", "--store", store, "--view", name, "--json"]).jsonObject()
            #expect(run["view"] as? String == name)
            #expect(run["digest"] as? String == digest, "\(name)")
            let report = try verifyReport(of: store)
            #expect(report["ok"] as? Bool == true, "after rebuilding \(name): \(report)")
        }
    }

    @Test("rebuild --view with an unknown name is a usage error (64)")
    func unknownView() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        let run = try replay(["rebuild", "--store", store, "--view", "nonsense"])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderrLines.first?.contains("nonsense") == true)
        #expect(run.stdout.isEmpty)
    }
}

@Suite("replay verify")
struct VerifyCommandTests {
    @Test("verify passes on a fresh demo store and names the damaged position after a record is damaged")
    func verifyThenDamage() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        let last = try makeDemoStore(at: store)

        let ok = try replayOK(["verify", "--store", store])
        #expect(ok.stdoutLines.contains("\(last) records, last position \(last), \(last) decoded, 0 of unknown types"), "\(ok)")
        let digestLine = try #require(ok.stdoutLines.last)
        let digest = try #require(digestLine.firstMatch(of: /^views digest (\S+) = fresh rebuild$/)).1
        #expect(!ok.stdout.contains("fault"))
        let report = try verifyReport(of: store)
        #expect(report["ok"] as? Bool == true)
        #expect((report["faults"] as? [Any])?.isEmpty == true)
        #expect(report["viewDigest"] as? String == String(digest))
        #expect(report["freshDigest"] as? String == String(digest))
        #expect(report["records"] as? Int == last)
        #expect(report["decoded"] as? Int == last)

        // Damage one record in the middle through the LMDB wrapper, then release the environment.
        let damaged: UInt64 = 7
        do {
            let environment = try LMDBEnvironment(directory: URL(fileURLWithPath: store))
            let events = try environment.openDatabase(named: "events", keys: BigEndianUInt64.self,
                                                      values: RawBytes.self, create: false)
            try environment.write { txn in
                var bytes = try #require(try txn.get(events, damaged))
                bytes[bytes.count - 1] ^= 0xFF
                bytes[bytes.count / 2] ^= 0x5A
                try txn.put(events, damaged, bytes)
            }
        }

        let bad = try replay(["verify", "--store", store])
        #expect(bad.status == 1, "\(bad)")
        let faults = bad.stdoutLines.filter { $0.hasPrefix("fault at position ") }
        #expect(faults.first?.hasPrefix("fault at position \(damaged): ") == true, "\(bad)")
        #expect(bad.stderrLines.count == 1)
        #expect(bad.stderr.contains("first at position \(damaged)"))
        #expect(!bad.stdout.contains("= fresh rebuild"))

        let badJSON = try replay(["verify", "--store", store, "--json"])
        #expect(badJSON.status == 1)
        let object = try badJSON.jsonObject()
        #expect(object["ok"] as? Bool == false)
        let positions = (object["faults"] as? [[String: Any]] ?? []).compactMap { $0["position"] as? Int }
        #expect(positions.min() == Int(damaged))
    }

    @Test("verify reports views that differ from a fresh fold; rebuild --view days repairs them")
    func staleViews() throws {
        let temp = try CLITempDirectory()
        defer { temp.remove() }
        let store = temp.path("store")
        try makeDemoStore(at: store)
        // Remove the `days` view records (the views no longer match the log): in each generation's
        // view database (`views.g0`, `views.g1`), the keys whose byte after the reader's 16 ID
        // bytes is the `days` table's group, 1 (`ViewKeyLayout` in EventStoreLMDB).
        do {
            let environment = try LMDBEnvironment(directory: URL(fileURLWithPath: store))
            let names = try environment.databaseNames()
            let viewDatabases = names.filter { $0 == "views.g0" || $0 == "views.g1" }
            try #require(viewDatabases.count == 2, "view databases: \(names)")
            var removed = 0
            for name in viewDatabases {
                let db = try environment.openDatabase(named: name, keys: RawBytes.self, values: RawBytes.self, create: false)
                try environment.write { txn in
                    var days: [[UInt8]] = []
                    try txn.forEach(db) { key, _ in
                        if key.count == 21, key[16] == 1 { days.append(key) }
                        return true
                    }
                    for key in days { try txn.delete(db, key) }
                    removed += days.count
                }
            }
            try #require(removed > 0, "the demo store has day records")
        }
        let bad = try replay(["verify", "--store", store])
        #expect(bad.status == 1, "\(bad)")
        #expect(bad.stdout.contains(": views: stored views"), "\(bad)")
        #expect(bad.stderrLines.count == 1)
        // Rebuilding only the damaged view repairs it.
        try replayOK(["rebuild", "--store", store, "--view", "days"])
        #expect(try verifyReport(of: store)["ok"] as? Bool == true)
    }
}
