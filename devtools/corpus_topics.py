"""Topics, names and sentences the corpus generator writes comments from.

Each topic has its own vocabulary, so a semantic search for one topic finds its comments
and not the others'. ``query`` is a question a search test can ask for that topic, and
``ocr_sentence`` is what an image-only attachment on that topic shows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    slug: str
    label: str
    query: str
    ocr_sentence: str
    sentences: tuple[str, ...]
    recommendations: tuple[tuple[str, str], ...]  # (provision, recommendation) table rows


TOPICS: tuple[Topic, ...] = (
    Topic(
        "rural_hospital_funding",
        "Rural hospital funding",
        "funding for small rural hospitals and critical access hospitals",
        "Rural hospitals in our county need stable funding to keep the emergency room open.",
        (
            "Our critical access hospital in {place} is the only emergency department within {count} miles.",
            "Rural hospitals operate on thin margins, and a cut of {pct} percent in facility payments would force us to close the obstetrics unit.",
            "The low-volume hospital adjustment must be preserved so that small rural facilities can keep their doors open.",
            "Patients in {place} already drive more than an hour for labor and delivery services since the last rural hospital closure.",
            "We urge the agency to protect the swing-bed program that lets rural hospitals provide post-acute care close to home.",
            "Sole community hospitals rely on cost-based reimbursement to recruit physicians to remote towns.",
            "Over the past {years} years, {count} rural hospitals in our state have closed or converted to rural emergency hospitals.",
            "The wage index floor is essential for rural facilities that compete with urban systems for nurses and technicians.",
            "Capital funding for aging rural hospital buildings, including roofs, generators and imaging equipment, is badly needed.",
            "A rural hospital is often the largest employer in the county, and its closure devastates the local economy.",
            "Ambulance transfer times from {place} to the nearest tertiary hospital exceed ninety minutes in winter.",
            "Medicare-dependent hospital status must be extended permanently to give rural hospitals predictable funding.",
        ),
        (("Low-volume adjustment", "Keep the current rural threshold"),
         ("Wage index floor", "Make the rural floor permanent"),
         ("Swing beds", "Exempt from the proposed payment cut")),
    ),
    Topic(
        "telehealth_reimbursement",
        "Telehealth reimbursement",
        "payment parity for telehealth and virtual visits",
        "Telehealth visits should be reimbursed at the same rate as in-person visits.",
        (
            "Telehealth visits allowed our patients in {place} to see a specialist without a three-hour drive.",
            "We ask for payment parity so that a video visit is reimbursed at the same rate as an in-person office visit.",
            "Audio-only telephone visits are essential for older beneficiaries who lack broadband or a smartphone.",
            "The originating site requirement should be removed permanently so patients can receive telehealth services at home.",
            "Our practice conducted {count} virtual visits last year, and {pct} percent of them were behavioral health appointments.",
            "Remote patient monitoring of blood pressure and glucose reduced emergency visits among our telehealth patients.",
            "Reimbursement for telemedicine should not depend on whether the clinician is in the same state as the patient.",
            "The in-person visit requirement for tele-mental health services creates a barrier that defeats the purpose of virtual care.",
            "Physicians need clear billing codes and modifiers for synchronous video telehealth and asynchronous e-visits.",
            "Federally qualified health centers should be paid as distant site providers for telehealth at the full encounter rate.",
            "Broadband gaps in {place} mean that telehealth coverage for audio-only calls must continue.",
            "Cutting telehealth payment rates by {pct} percent would end our virtual care program.",
        ),
        (("Audio-only visits", "Cover permanently"),
         ("Originating site", "Allow the patient home"),
         ("Payment rate", "Parity with in-person visits")),
    ),
    Topic(
        "prior_authorization_burden",
        "Prior authorization burden",
        "delays and paperwork from prior authorization requirements by insurers",
        "Prior authorization delays are keeping patients from the treatment they need.",
        (
            "Our clinic staff spend {count} hours every week on prior authorization requests, faxes and appeals.",
            "Prior authorization delays of two weeks or more forced patients to abandon the treatment their physician prescribed.",
            "Medicare Advantage plans deny prior authorization requests that would have been approved under traditional Medicare.",
            "We support requiring payers to answer urgent prior authorization requests within seventy-two hours.",
            "An electronic prior authorization API would replace the fax machines and phone trees our office still depends on.",
            "Payers should publish their prior authorization approval and denial rates every year.",
            "Step therapy and repeated reauthorization for chronic conditions add administrative burden without improving care.",
            "In {place}, {pct} percent of our prior authorization denials were overturned on appeal, which shows the initial review is unreliable.",
            "Gold-carding programs should exempt physicians with high approval rates from prior authorization for routine services.",
            "A denial letter must state the specific clinical reason and the criteria the utilization review used.",
            "Prior authorization for post-acute care transfers keeps patients in hospital beds for days while the plan decides.",
            "The administrative burden of prior authorization contributes to physician burnout in our practice.",
        ),
        (("Decision deadline", "72 hours for urgent requests"),
         ("Denial reasons", "Specific clinical rationale"),
         ("Electronic API", "Required for all payers")),
    ),
    Topic(
        "drug_price_transparency",
        "Drug price transparency",
        "transparency of prescription drug prices, rebates and pharmacy benefit managers",
        "Drug manufacturers should disclose list prices and rebates to patients.",
        (
            "Pharmacy benefit managers should disclose the rebates they negotiate with drug manufacturers.",
            "Patients in {place} pay {pct} percent more at the pharmacy counter for insulin than the net price the plan pays.",
            "Television advertisements for prescription drugs should state the list price of a thirty-day supply.",
            "Spread pricing by pharmacy benefit managers hides how much of each prescription dollar reaches the pharmacy.",
            "The list price of our patients' specialty drugs rose {pct} percent over {years} years with no change in the medicine.",
            "A public database of drug prices, launch prices and annual increases would help purchasers and researchers.",
            "Manufacturer coupons and copay accumulator programs obscure the true cost of brand-name medications.",
            "Independent pharmacies in {place} are reimbursed below their acquisition cost for generic drugs.",
            "Price transparency for prescription drugs must include the rebates and fees that never appear on a claim.",
            "Negotiated drug prices under Medicare Part D should be published so employers can compare them.",
            "Patients deserve to know the cash price of a prescription before they reach the pharmacy counter.",
            "Rebate walls let manufacturers block lower-cost biosimilars from formularies.",
        ),
        (("PBM rebates", "Disclose to plan sponsors and the public"),
         ("List prices", "Show in drug advertising"),
         ("Price increases", "Report annually with justification")),
    ),
    Topic(
        "nurse_staffing_ratios",
        "Nurse staffing ratios",
        "minimum nurse staffing ratios in hospitals and nursing homes",
        "Safe nurse staffing ratios protect patients and prevent nurse burnout.",
        (
            "Registered nurses on our medical-surgical unit care for {count} patients each on a typical night shift.",
            "Minimum nurse-to-patient ratios save lives by reducing falls, pressure ulcers and hospital-acquired infections.",
            "Nursing homes should have a registered nurse on site twenty-four hours a day, seven days a week.",
            "Chronic understaffing drives nurse burnout, and {pct} percent of the nurses in our hospital plan to leave within {years} years.",
            "Travel nurse agencies charge rates that small facilities in {place} cannot afford when staff quit.",
            "The proposed hours per resident day for certified nursing assistants must be enforced with public staffing data.",
            "Mandatory overtime is not a staffing plan; it is a patient safety hazard.",
            "Staffing committees with direct-care nurses should set unit-level ratios based on patient acuity.",
            "Payroll-based journal data shows weekend nurse staffing falls far below weekday levels.",
            "Nursing schools in {place} turn away qualified applicants because there are too few nursing faculty.",
            "A ratio of one nurse to four patients on medical-surgical units is the evidence-based standard.",
            "Rural nursing homes need funding and time to recruit before a staffing mandate takes effect.",
        ),
        (("Registered nurse on site", "24 hours, 7 days"),
         ("Medical-surgical ratio", "One nurse to four patients"),
         ("Staffing data", "Publish weekend and night staffing")),
    ),
    Topic(
        "patient_data_privacy",
        "Data privacy of patient records",
        "privacy and security of electronic patient health records and HIPAA",
        "Patient health records must be protected from unauthorized disclosure.",
        (
            "Electronic health records must be protected with encryption at rest and in transit.",
            "Patients should be notified within {count} days when a data breach exposes their medical records.",
            "Health apps that receive records through an API are often not covered by HIPAA privacy rules.",
            "Reproductive health information deserves heightened protection against disclosure for law enforcement investigations.",
            "Our hospital in {place} suffered a ransomware attack that shut down the electronic health record for {count} days.",
            "Consent for sharing substance use disorder treatment records should follow the patient across providers.",
            "De-identified patient data can be re-identified when it is combined with location and purchase data.",
            "Business associates that store protected health information must meet the same security standards as hospitals.",
            "Patients should be able to see an accounting of every disclosure of their health records.",
            "Multi-factor authentication should be required for every clinician who accesses patient records remotely.",
            "Data brokers should not be allowed to sell health information collected outside of HIPAA.",
            "Audit logs of record access helped us detect an employee snooping on a celebrity patient's chart.",
        ),
        (("Breach notice", "Within 30 days"),
         ("Health apps", "Extend privacy protections"),
         ("Access logs", "Available to patients on request")),
    ),
    Topic(
        "medicaid_redetermination",
        "Medicaid eligibility redetermination",
        "Medicaid renewals, eligibility redetermination and coverage loss for procedural reasons",
        "Families lost Medicaid coverage because renewal paperwork was never received.",
        (
            "During the unwinding, {pct} percent of Medicaid disenrollments in {place} were for procedural reasons rather than ineligibility.",
            "States should use ex parte renewals based on data they already hold before mailing a renewal form.",
            "Families lost Medicaid coverage because renewal notices were sent to outdated mailing addresses.",
            "Children should keep continuous Medicaid eligibility for twelve months regardless of income changes.",
            "Call center wait times of more than {count} minutes kept enrollees from completing their redetermination.",
            "A ninety-day reconsideration period lets people who lost coverage for paperwork reasons re-enroll without a new application.",
            "Eligibility workers in {place} are handling twice the caseload they had before the public health emergency ended.",
            "Renewal forms should be available online, by phone and in the languages enrollees speak.",
            "Medicaid enrollees with disabilities need more time and assistance to return renewal documentation.",
            "Coverage gaps after a procedural termination lead to missed prescriptions and emergency room visits.",
            "The agency should require states to report disenrollment data by reason, county and age group.",
            "Redetermination should not require enrollees to resubmit income documents the state can verify electronically.",
        ),
        (("Ex parte renewals", "Required before any form is mailed"),
         ("Reconsideration period", "90 days"),
         ("Reporting", "Disenrollment reasons by county")),
    ),
    Topic(
        "air_quality_monitoring",
        "Air quality monitoring",
        "air pollution monitoring networks for fine particulate matter and ozone",
        "Air quality monitors must be placed near the neighborhoods that breathe the pollution.",
        (
            "The nearest fine particulate matter monitor is {count} miles from the refinery fence line in {place}.",
            "Low-cost air sensors deployed by residents recorded PM2.5 spikes the regulatory monitor never saw.",
            "Ozone monitoring should run year-round rather than only during the summer ozone season.",
            "Near-road nitrogen dioxide monitors belong beside the freight corridors where diesel trucks idle.",
            "Wildfire smoke pushed the air quality index above {count} for {years} weeks last summer in {place}.",
            "Community air monitoring data should be published in real time with an explanation of health risks.",
            "The monitoring network must add sites in overburdened communities next to ports, rail yards and warehouses.",
            "Continuous emissions monitoring at industrial stacks should be paired with fenceline monitors for benzene.",
            "Monitor siting criteria should consider asthma rates and hospital admissions, not only population counts.",
            "Federal equivalent method monitors are expensive, and state agencies need grants to replace aging equipment.",
            "Particulate matter readings fell {pct} percent after the diesel retrofit program, which shows monitoring guides policy.",
            "Air toxics such as ethylene oxide and formaldehyde are not captured by the criteria pollutant network.",
        ),
        (("Fenceline monitors", "Require at refineries"),
         ("Ozone season", "Monitor year-round"),
         ("Community sensors", "Publish data in real time")),
    ),
)

TOPIC_BY_SLUG = {topic.slug: topic for topic in TOPICS}

PLACES = (
    "Adams County", "Harlan County", "the Mississippi Delta", "northern Maine", "the Texas Panhandle",
    "Cook County", "the Central Valley", "eastern Kentucky", "the Navajo Nation", "southern Georgia",
    "the Upper Peninsula", "western Nebraska", "Baton Rouge", "the Bronx", "Tulare County",
)

OPENINGS = (
    "Thank you for the opportunity to comment on this proposed rule.",
    "I am writing to comment on the proposed rule published in the Federal Register.",
    "We appreciate the chance to provide input on this proposal.",
    "Please accept these comments on behalf of our members.",
    "I respectfully submit the following comments.",
)

CLOSINGS = (
    "Thank you for considering these comments.",
    "We would welcome the opportunity to discuss these recommendations further.",
    "Please contact us if you have questions about these comments.",
    "Sincerely submitted for the record.",
)

FIRST_NAMES = (
    "Maria", "James", "Aisha", "Robert", "Linda", "Wei", "Carlos", "Patricia", "Daniel", "Fatima",
    "Michael", "Jennifer", "David", "Nguyen", "Sarah", "Joseph", "Emily", "Kwame", "Laura", "Thomas",
)

LAST_NAMES = (
    "Garcia", "Smith", "Johnson", "Okafor", "Williams", "Chen", "Brown", "Martinez", "Davis", "Patel",
    "Miller", "Wilson", "Anderson", "Tran", "Taylor", "Thomas", "Moore", "Jackson", "Lee", "Harris",
)

ORGANIZATIONS = (
    "American Rural Health Alliance", "State Hospital Association", "Coalition for Patient Rights",
    "National Nurses Forum", "Community Health Center Network", "Clean Air Neighbors",
    "Family Physicians Society", "Independent Pharmacy Cooperative", "Medicaid Advocacy Project",
    "County Board of Health", "Digital Health Council", "Senior Citizens League",
)

# (agency id, agency name, docket title) for generated dockets, used in turn.
AGENCY_DOCKETS = (
    ("CMS", "Centers for Medicare & Medicaid Services",
     "Medicare and Medicaid Programs; Calendar Year 2027 Payment Policies"),
    ("EPA", "Environmental Protection Agency",
     "Revisions to the Ambient Air Monitoring Network Requirements"),
    ("ACF", "Administration for Children and Families",
     "Program Integrity and Access in Family Assistance Programs"),
    ("FDA", "Food and Drug Administration",
     "Prescription Drug Price and Labeling Disclosure"),
    ("HRSA", "Health Resources and Services Administration",
     "Rural Health Workforce and Facility Grants"),
    ("ONC", "Office of the National Coordinator for Health Information Technology",
     "Health Data, Technology, and Interoperability Standards"),
)

RULE_SENTENCES = (
    "This proposed rule would revise the regulations that govern payment and program integrity.",
    "The agency invites comment on the estimated burden and on alternatives that would reduce it.",
    "The regulatory impact analysis estimates annual costs and transfers over a ten-year period.",
    "Section II of this preamble describes the provisions of the proposed regulations in detail.",
    "The Paperwork Reduction Act requires the agency to solicit comment on information collections.",
    "We propose to make conforming changes to the definitions in the code of federal regulations.",
    "Commenters are encouraged to provide data supporting any recommended change to these provisions.",
    "The effective date of the final rule would be sixty days after publication in the Federal Register.",
)
