import Foundation

/// The one progress line of the commands that run long (`rebuild`, `import-from`, `demo`): drawn
/// on stderr, over itself (`\r`), only when stderr is a terminal and the command prints text (not
/// `--json`), so logs and pipes never get it.
///
/// `Sendable`: only constants; importers call it from their own thread.
struct Progress: Sendable {
    /// What is counted ("events", "rows").
    let unit: String
    /// Whether the bar also shows the rate and the time left.
    let showsRate: Bool
    /// Whether anything is drawn.
    let isShown: Bool
    private let start = ContinuousClock.now

    /// A progress line counting `unit`; `json` commands show none.
    init(unit: String, showsRate: Bool = false, json: Bool = false) {
        self.unit = unit
        self.showsRate = showsRate
        isShown = isatty(2) == 1 && !json
    }

    /// Draws a bar of `done` of `all` (nothing when `all` is 0).
    func bar(_ done: some BinaryInteger, of all: some BinaryInteger) {
        guard isShown, all > 0 else { return }
        let (done, all) = (Double(done), Double(all))
        let width = 30
        let filled = Int(Double(width) * done / all)
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: max(0, width - filled))
        var text = String(format: "\r[%@] %3.0f%% %.0f/%.0f %@ ", bar, 100 * done / all, done, all, unit)
        if showsRate {
            let elapsed = seconds
            let rate = elapsed > 0 ? done / elapsed : 0
            let left = rate > 0 ? (all - min(all, done)) / rate : 0
            text += String(format: "· %.0f %@/s · %.0f s left ", rate, unit, left)
        }
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Draws `text` as the line (a count without a total).
    func line(_ text: String) {
        guard isShown else { return }
        FileHandle.standardError.write(Data("\r\(text)".utf8))
    }

    /// Ends the line, so what follows starts on a line of its own.
    func end() {
        if isShown { warn("") }
    }

    /// Seconds since the line was created.
    var seconds: Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
