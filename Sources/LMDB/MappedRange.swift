import Foundation

extension LMDBEnvironment {
    /// Where `dataFile` is mapped in this process (first byte, one past the last), for the bounds
    /// check of every value read (``MapBounds``); `nil` where it cannot be learned, and values are
    /// then not bounds-checked. The open's short-file guard (``checkDataFileLength(_:path:)``:
    /// `fstat` and the meta page) needs none of this and runs everywhere.
    static func mappedRange(of dataFile: String) -> (start: UInt, end: UInt)? {
        #if os(Linux)
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return nil }
        var found: (start: UInt, end: UInt)?
        for line in maps.split(separator: "\n") where line.hasSuffix(dataFile) {
            let range = line.prefix { $0 != " " }.split(separator: "-")
            if range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16) {
                found = (found.map { min($0.start, start) } ?? start, found.map { max($0.end, end) } ?? end)
            }
        }
        return found
        #else
        // Darwin has no /proc, and LMDB 0.9 does not say where it mapped the file (MDB_envinfo's
        // me_mapaddr is the fixed address of MDB_FIXEDMAP, usually 0): values are not
        // bounds-checked there. Not compiled by this project's CI (no Apple toolchain).
        return nil
        #endif
    }
}
