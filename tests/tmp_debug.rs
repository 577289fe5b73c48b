#[test]
fn dbg() {
    let path = std::env::var("DBG_FILE").unwrap();
    let cfg = steptop::config::Config::default_checked();
    let a = steptop::report::analyze(&[std::path::PathBuf::from(path)], &cfg).unwrap();
    let t = &a.model.timeline;
    let (med, mad) = t.spread.unwrap();
    println!("med {med} mad {mad}");
    for m in t.marks.iter() {
        if m.ms > 1.5 * med {
            println!("{:?} {} {:?}", m.step, m.ms, m.after);
        }
    }
}
