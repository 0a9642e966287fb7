import Foundation
import Plot
import Projections
import ReadingEvents

/// The reading report page: one self-contained HTML document (inline SVG and CSS, no script, no
/// network, no external fonts or images) that draws a ``ReportData``.
///
/// Every chart is a `<figure>` with a text title (`<h2>`), an accessible description (the SVG's
/// `aria-describedby`) and its data as a table inside `<details>`. Light and dark follow
/// `prefers-color-scheme`; text uses the system font stack, so Korean and other non-Latin titles
/// render with whatever font the system has.
///
/// The DOM carries the plotted numbers as data attributes, so tests (and curious readers) can check
/// the page against the views: each calendar square is a `rect.day` with `data-date` and
/// `data-pages`; each category bar a `rect.category` with `data-books`.
///
/// `Sendable`: a namespace.
public enum ReportPage {
    /// The HTML document for `data`.
    public static func html(for data: ReportData) -> String {
        let who = data.nickname ?? "reader \(data.reader.description.prefix(8))"
        let title = "Reading report \(data.year) · \(who)"
        let html = HTML(
            .lang(.english),
            .head(
                .meta(.charset(.utf8)),
                .meta(.name("viewport"), .content("width=device-width, initial-scale=1")),
                .meta(.name("color-scheme"), .content("light dark")),
                // Not Plot's `.title(_:)`: it also writes the title into `og:title` and
                // `twitter:title` attribute values without escaping them.
                .element(named: "title", text: title),
                .meta(.attribute(named: "property", value: "og:title"), escapedAttribute("content", title)),
                .meta(.name("twitter:title"), escapedAttribute("content", title)),
                .style(stylesheet)
            ),
            .body(
                .element(named: "header", nodes: [
                    .h1(.text("\(data.year) reading report")),
                    .p(.class("sub"), .text("\(who) · as of \(data.today)")),
                ]),
                .element(named: "main", nodes: [
                    Charts.review(data),
                    Charts.calendar(data),
                    Charts.challenge(data),
                    Charts.dailyBars(data),
                    Charts.monthly(data),
                    Charts.timeOfDay(data),
                    Charts.categories(data),
                    Charts.shelf(data),
                    Charts.streaks(data),
                    Charts.home(data),
                    Charts.readingSpeed(data),
                    Charts.timeLeft(data),
                ])
            )
        )
        return html.render()
    }

    static let stylesheet = """
    :root{color-scheme:light dark;--bg:#fbfaf7;--fg:#1f2328;--muted:#646a73;--card:#ffffff;--line:#d9dce1;\
    --l0:#ebedf0;--l1:#c6e6c3;--l2:#8fcf8a;--l3:#4fa74a;--l4:#21702a;--accent:#e0772b;--accent2:#3b7dd8;--today:#d63c3c}
    @media (prefers-color-scheme: dark){:root{--bg:#15171a;--fg:#e6e8eb;--muted:#9aa1ab;--card:#1e2125;--line:#363b42;\
    --l0:#2a2e34;--l1:#1f4a27;--l2:#2c6e35;--l3:#43a04c;--l4:#7bd87f;--accent:#f0a35e;--accent2:#79a9ee;--today:#ff6b6b}}
    *{box-sizing:border-box}
    body{margin:0;background:var(--bg);color:var(--fg);font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",\
    "Apple SD Gothic Neo","Noto Sans CJK KR","Noto Sans KR","Malgun Gothic",Roboto,"Helvetica Neue",Arial,sans-serif;\
    line-height:1.45}
    header{padding:24px 28px 8px}h1{margin:0;font-size:28px}.sub{margin:4px 0 0;color:var(--muted)}
    main{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:16px;padding:16px 28px 32px}
    figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 16px}
    figure.wide{grid-column:1/-1}
    h2{margin:0 0 2px;font-size:17px}.desc{margin:0 0 8px;color:var(--muted);font-size:13px}
    svg{display:block;width:100%;height:auto;overflow:visible}
    svg text{fill:var(--muted);font-size:10px;font-family:inherit}
    svg text.label{fill:var(--fg)}svg text.count{fill:#fff;font-weight:600}.category.path{fill:var(--l2)}
    .day.l0{fill:var(--l0)}.day.l1{fill:var(--l1)}.day.l2{fill:var(--l2)}.day.l3{fill:var(--l3)}.day.l4{fill:var(--l4)}
    .day.today{stroke:var(--today);stroke-width:2}
    .bar,.category,.run{fill:var(--l3)}.bar.minutes,.finish{fill:var(--accent2)}.bar.today{fill:var(--accent)}
    .axis{stroke:var(--line);stroke-width:1}.pace{fill:none;stroke:var(--muted);stroke-width:1.5;stroke-dasharray:5 4}
    .actual{fill:none;stroke:var(--accent);stroke-width:2.5}.todayline{stroke:var(--today);stroke-width:1}
    .spine{stroke:var(--card);stroke-width:1}.progress{fill:var(--l0)}.progress.done{fill:var(--accent)}
    details{margin-top:8px;font-size:13px}summary{cursor:pointer;color:var(--muted)}
    table{border-collapse:collapse;margin-top:6px}th,td{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
    td.n,th.n{text-align:right}
    dl.review{display:grid;grid-template-columns:auto 1fr;gap:4px 14px;margin:6px 0 0}dl.review dt{color:var(--muted)}
    dl.review dd{margin:0;font-weight:600}
    """
}

/// An attribute whose value is `value` escaped: the one way text reaches an attribute on the page.
///
/// Plot escapes text nodes (`.text`, `.element(named:text:)`) but writes attribute values as given,
/// so every attribute value that is not a constant goes through here: Plot's own text escaping
/// (`<`, `>`, `&`), then the quotes an attribute value needs escaped too.
func escapedAttribute<Context>(_ name: String, _ value: String) -> Attribute<Context> {
    let escaped = Node<HTML.BodyContext>.text(value).render()
        .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    return Attribute(name: name, value: escaped, ignoreIfValueIsEmpty: false)
}

/// One SVG or HTML node of the page body.
typealias BodyNode = Node<HTML.BodyContext>

/// Small builders for SVG elements (Plot has none): element names and attributes, values escaped.
enum SVG {
    static func el(_ name: String, _ attributes: [(String, String)], _ children: [BodyNode] = []) -> BodyNode {
        .element(named: name, nodes: attributes.map { BodyNode.attribute(escapedAttribute($0.0, $0.1)) } + children)
    }
    static func rect(x: Double, y: Double, w: Double, h: Double, _ attributes: [(String, String)], title: String? = nil) -> BodyNode {
        el("rect", [("x", n(x)), ("y", n(y)), ("width", n(max(0, w))), ("height", n(max(0, h)))] + attributes,
           title.map { [el("title", [], [.text($0)])] } ?? [])
    }
    static func text(x: Double, y: Double, _ content: String, anchor: String = "start", cls: String? = nil) -> BodyNode {
        el("text", [("x", n(x)), ("y", n(y)), ("text-anchor", anchor)] + (cls.map { [("class", $0)] } ?? []), [.text(content)])
    }
    static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, cls: String) -> BodyNode {
        el("line", [("x1", n(x1)), ("y1", n(y1)), ("x2", n(x2)), ("y2", n(y2)), ("class", cls)])
    }
    static func polyline(_ points: [(Double, Double)], cls: String) -> BodyNode {
        el("polyline", [("points", points.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ")), ("class", cls)])
    }
    /// A number with at most one decimal.
    static func n(_ v: Double) -> String {
        let r = (v * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(r)
    }
}

/// One chart card: title, description, the drawing, and the data table behind `<details>`.
func figure(id: String, title: String, description: String, wide: Bool = false, width: Double, height: Double,
            drawing: [BodyNode], extra: [BodyNode] = [], headers: [String], rows: [[String]], numeric: Set<Int> = []) -> BodyNode {
    let svg = SVG.el("svg", [("viewBox", "0 0 \(SVG.n(width)) \(SVG.n(height))"), ("role", "img"),
                             ("aria-labelledby", "\(id)-title"), ("aria-describedby", "\(id)-desc"), ("class", "\(id)-chart")],
                     drawing)
    return .element(named: "figure", nodes: [
        .id(id), .class(wide ? "chart wide" : "chart"),
        .h2(.id("\(id)-title"), .text(title)),
        .p(.id("\(id)-desc"), .class("desc"), .text(description)),
        svg,
        .group(extra),
        dataTable(caption: title, headers: headers, rows: rows, numeric: numeric),
    ])
}

/// The data of a chart as a table inside `<details>`.
func dataTable(caption: String, headers: [String], rows: [[String]], numeric: Set<Int> = []) -> BodyNode {
    .details(
        .summary(.text("Data: \(caption) (\(rows.count) rows)")),
        .table(
            .thead(.tr(.forEach(headers.enumerated()) { i, h in .th(.class(numeric.contains(i) ? "n" : ""), .text(h)) })),
            .tbody(.forEach(rows) { row in
                .tr(.forEach(row.enumerated()) { i, cell in .td(.class(numeric.contains(i) ? "n" : ""), .text(cell)) })
            })
        )
    )
}
