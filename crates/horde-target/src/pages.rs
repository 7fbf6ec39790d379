//! The HTML the target serves, shaped as JSF renders it: every form carries its own hidden
//! `javax.faces.ViewState` input (numbered in the page's order, `j_id1:javax.faces.ViewState:0`,
//! `:1`, ..., all with the view's one value), so a browser's submit sends it, and the regex
//! users already have for JSF sites (`id="j_id1:javax.faces.ViewState:1" value="([^"]*)"`)
//! finds it: every page has the header's search form first, then its own.

/// The hidden input JSF renders inside the `index`-th form of a page.
fn view_state_input(view_state: &str, index: usize) -> String {
    format!(
        "<input type=\"hidden\" name=\"javax.faces.ViewState\" id=\"j_id1:javax.faces.ViewState:{index}\" \
         value=\"{view_state}\" autocomplete=\"off\" />"
    )
}

/// A page: the header's search form (the view's form 0), then `content`, whose forms write
/// their ViewState with [`ViewForms::input`].
pub fn layout(title: &str, view_state: &str, content: impl FnOnce(&mut ViewForms) -> String) -> String {
    let mut forms = ViewForms { view_state, next: 0 };
    let search = format!(
        "<form id=\"search\" method=\"post\" action=\"/search\"><input name=\"q\" placeholder=\"Search\" />\
         <button type=\"submit\">Search</button>{}</form>",
        forms.input()
    );
    let content = content(&mut forms);
    format!(
        "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n{search}\n\
         <h1 class=\"title\">{title}</h1>\n{content}\n</body></html>\n"
    )
}

/// The forms of one page: each takes the next ViewState input.
pub struct ViewForms<'a> {
    view_state: &'a str,
    next: usize,
}

impl ViewForms<'_> {
    pub fn input(&mut self) -> String {
        self.next += 1;
        view_state_input(self.view_state, self.next - 1)
    }
}

pub fn home(view_state: &str, message: &str) -> String {
    layout("Saw mill", view_state, |forms| {
        format!(
            "<p>Welcome to the saw mill.</p><p id=\"message\">{}</p><a id=\"login\" href=\"/login\">Log in</a>\
             <form id=\"newsletter\" method=\"post\" action=\"/newsletter\"><input name=\"email\" type=\"email\" />\
             <button type=\"submit\">Subscribe</button>{}</form>",
            escape(message),
            forms.input()
        )
    })
}

pub fn login(view_state: &str) -> String {
    layout("Log in", view_state, |forms| {
        format!(
            "<form id=\"loginForm\" method=\"post\" action=\"/login\">\
             <input name=\"username\" /><input name=\"password\" type=\"password\" />\
             <button type=\"submit\">Log in</button>{}</form>",
            forms.input()
        )
    })
}

pub fn account(view_state: &str, user: &str, message: &str) -> String {
    layout("Account", view_state, |forms| {
        format!(
            "<p id=\"user\">{}</p><p id=\"message\">{}</p>\
             <form id=\"commentForm\" method=\"post\" action=\"/account\"><input name=\"comment\" />\
             <button type=\"submit\">Save</button>{}</form>\
             <form id=\"uploadForm\" method=\"post\" action=\"/upload\" enctype=\"multipart/form-data\">\
             <input type=\"file\" name=\"file_upload_file\" /><button type=\"submit\">Upload</button>{}</form>\
             <a id=\"logout\" href=\"/logout\">Log out</a>",
            escape(user),
            escape(message),
            forms.input(),
            forms.input()
        )
    })
}

/// What the search form found among `items` (names).
pub fn search(view_state: &str, query: &str, found: &[&str]) -> String {
    layout("Search", view_state, |_| {
        let items: String = found.iter().map(|name| format!("<li class=\"item\">{}</li>", escape(name))).collect();
        format!("<p id=\"query\">{}</p><ul id=\"results\">{items}</ul><a href=\"/\">Home</a>", escape(query))
    })
}

pub fn view_expired() -> String {
    "<!DOCTYPE html>\n<html><head><title>Error</title></head><body>\
     <h1>javax.faces.application.ViewExpiredException</h1>\
     <p>viewId:/page.xhtml - View /page.xhtml could not be restored.</p></body></html>\n"
        .to_string()
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forms of a page and the ViewState input each holds.
    fn forms(page: &str) -> Vec<(String, String)> {
        page.split("<form")
            .skip(1)
            .map(|form| {
                let form = &form[..form.find("</form>").expect("a closed form")];
                let id = form.split("id=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
                let input = form.split("id=\"j_id1:javax.faces.ViewState:").nth(1).map(|rest| rest[..1].to_string());
                (id.to_string(), input.unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn every_form_holds_its_own_view_state_numbered_in_page_order() {
        assert_eq!(forms(&home("1:2", "")), [("search".into(), "0".into()), ("newsletter".into(), "1".into())]);
        assert_eq!(forms(&login("1:2")), [("search".into(), "0".into()), ("loginForm".into(), "1".into())]);
        assert_eq!(
            forms(&account("1:2", "sawyer", "")),
            [("search".into(), "0".into()), ("commentForm".into(), "1".into()), ("uploadForm".into(), "2".into())]
        );
        assert_eq!(forms(&search("1:2", "oak", &["oak plank"])), [("search".into(), "0".into())]);
        // The regex of seed 000's journey finds the view's value on every page it reads.
        for page in [home("7:8", ""), login("7:8"), account("7:8", "u", "")] {
            assert!(page.contains("id=\"j_id1:javax.faces.ViewState:1\" value=\"7:8\""), "{page}");
        }
    }
}
