// Timing, statistics, temporary directories, child processes and memory readings.
import EventStoreLMDB
import Foundation
import Projections
import ReadingEvents

#if canImport(Glibc)
import Glibc
#endif

/// Seconds on the monotonic clock.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let s = values.sorted()
    guard !s.isEmpty else { return .nan }
    let index = min(s.count - 1, Int((p * Double(s.count)).rounded(.up)) - 1)
    return s[max(0, index)]
}

/// A fresh directory under the system temporary directory; removed by `removeTemp`.
func makeTemp(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("reading-bench-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max))")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func removeTemp(_ url: URL) { try? FileManager.default.removeItem(at: url) }

func fileSize(_ url: URL) -> Int {
    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
}

/// Sum of the sizes of the regular files in a directory (SQLite: db + wal + shm).
func directorySize(_ url: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
    return names.reduce(0) { $0 + fileSize(url.appendingPathComponent($1)) }
}

/// A value of /proc/self/status in kB (VmHWM, VmRSS, RssAnon, RssFile).
func procStatus(_ key: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Int(line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? -1
    }
    return -1
}

/// Samples RssAnon every few milliseconds on a background thread, keeping the peak.
final class AnonPeakSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0
    private var running = true
    private var thread: Thread?

    func start() {
        let t = Thread { [self] in
            while true {
                let value = procStatus("RssAnon")
                lock.lock()
                peak = max(peak, value)
                let go = running
                lock.unlock()
                if !go { return }
                usleep(2_000)
            }
        }
        thread = t
        t.start()
    }

    func stop() -> Int {
        let last = procStatus("RssAnon")
        lock.lock(); running = false; peak = max(peak, last); let p = peak; lock.unlock()
        usleep(5_000)
        return p
    }
}

/// Runs this executable again with `arguments`; returns its stdout lines starting with RESULT,
/// split on spaces (without the tag), and the child's wall time measured here.
func runChild(_ arguments: [String]) throws -> (fields: [String], wall: Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    let started = now()
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let wall = now() - started
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0,
          let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }) else {
        throw BenchError.child("child \(arguments) exited \(process.terminationStatus): \(text)")
    }
    return (line.split(separator: " ").dropFirst().map(String.init), wall)
}

enum BenchError: Error { case child(String) }

/// Progress lines on stderr, so stdout keeps only the table.
func note(_ text: String) {
    FileHandle.standardError.write(Data("[\(String(format: "%7.1f", now() - benchStart))s] \(text)\n".utf8))
}

nonisolated(unsafe) var benchStart = now()

// MARK: Formatting

func rate(_ perSecond: Double) -> String {
    if perSecond >= 1e6 { return String(format: "%.2fM/s", perSecond / 1e6) }
    if perSecond >= 1e3 { return String(format: "%.1fk/s", perSecond / 1e3) }
    return String(format: "%.0f/s", perSecond)
}

func micros(_ seconds: Double) -> String {
    seconds >= 1e-3 ? String(format: "%.2f ms", seconds * 1e3) : String(format: "%.0f µs", seconds * 1e6)
}

func mib(_ kb: Int) -> String { String(format: "%.0f MiB", Double(kb) / 1024) }

/// User + system CPU seconds of this process so far.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Minor page faults of this process so far: the P7 children report how many their measured part
/// took (pages of the map and of the program touched for the first time).
func minorPageFaults() -> Int {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return usage.ru_minflt
}
