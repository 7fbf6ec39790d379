//! The resources a browser fetches after an HTML page (`infer_html_resources`): its scripts,
//! style sheets, images and icons, as absolute URLs, each once, in document order.

use scraper::{Html, Selector};
use std::sync::LazyLock;
use url::Url;

/// More than this many resources from one page are left out: a page is not a crawl.
pub const MAX_RESOURCES_PER_PAGE: usize = 100;

/// Elements whose URL a browser loads with the page, and the attribute holding it. Links to
/// other pages (`a href`), prefetch hints and lazy frames are not part of the page's load.
static RESOURCE_ELEMENTS: LazyLock<[(Selector, &'static str); 5]> = LazyLock::new(|| {
    let selector = |css: &str| Selector::parse(css).expect("a valid selector");
    [
        (selector("script[src]"), "src"),
        (selector("link[href][rel~=stylesheet]"), "href"),
        (selector("link[href][rel~=icon]"), "href"),
        (selector("img[src]"), "src"),
        (selector("input[type=image][src]"), "src"),
    ]
});

static BASE: LazyLock<Selector> = LazyLock::new(|| Selector::parse("base[href]").expect("a valid selector"));

/// The http(s) URLs of the page's resources, resolved against its `<base href>` or its own URL.
pub fn page_resources(html: &Html, page_url: &Url) -> Vec<Url> {
    let base = html
        .select(&BASE)
        .next()
        .and_then(|base| base.value().attr("href"))
        .and_then(|href| page_url.join(href).ok())
        .unwrap_or_else(|| page_url.clone());
    let mut urls: Vec<Url> = Vec::new();
    // Document order, as the browser's parser meets them.
    for element in html.root_element().descendants().filter_map(scraper::ElementRef::wrap) {
        let Some(attribute) = RESOURCE_ELEMENTS.iter().find(|(s, _)| s.matches(&element)).map(|(_, a)| *a) else {
            continue;
        };
        let Some(href) = element.value().attr(attribute).map(str::trim).filter(|h| !h.is_empty()) else {
            continue;
        };
        let Ok(mut url) = base.join(href) else { continue };
        if !matches!(url.scheme(), "http" | "https") {
            continue; // data:, javascript:, and the like load nothing from the server.
        }
        url.set_fragment(None);
        if !urls.contains(&url) {
            urls.push(url);
            if urls.len() == MAX_RESOURCES_PER_PAGE {
                break;
            }
        }
    }
    urls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_a_browser_loads_once_each_in_document_order() {
        let page = Html::parse_document(
            r#"<html><head>
                <link rel="stylesheet" href="/css/site.css">
                <link rel="icon" href="favicon.ico">
                <link rel="next" href="/page2">
                <script src="app.js#top"></script>
                <script>inline()</script>
            </head><body>
                <img src="img/logo.png"><img src="img/logo.png">
                <img src="data:image/png;base64,AAAA">
                <a href="/elsewhere">link</a>
                <input type="image" src="https://cdn.example/button.png">
            </body></html>"#,
        );
        let page_url = Url::parse("https://site.example/app/index.html").unwrap();
        let found: Vec<String> = page_resources(&page, &page_url).into_iter().map(String::from).collect();
        assert_eq!(
            found,
            [
                "https://site.example/css/site.css",
                "https://site.example/app/favicon.ico",
                "https://site.example/app/app.js",
                "https://site.example/app/img/logo.png",
                "https://cdn.example/button.png",
            ]
        );
    }

    #[test]
    fn base_href_moves_relative_urls() {
        let page = Html::parse_document(r#"<head><base href="/static/"></head><body><img src="a.png"></body>"#);
        let found = page_resources(&page, &Url::parse("http://127.0.0.1:8080/x/y").unwrap());
        assert_eq!(found, [Url::parse("http://127.0.0.1:8080/static/a.png").unwrap()]);
    }
}
